@testable import BatonHTTP
import Testing

/// How many event loops a server runs (issue 30): the CPUs it may really use.
struct UsableCPUsTests {
    @Test(arguments: [
        (16, nil, nil, 16),                       // nothing limits it
        (16, 4, nil, 4),                          // pinned to 4 CPUs (taskset, cpuset)
        (16, nil, "max 100000", 16),              // a cgroup without a quota
        (16, nil, "200000 100000\n", 2),          // a quota of 2 CPUs
        (16, nil, "150000 100000", 2),            // 1.5 CPUs keep 2 loops busy
        (16, 8, "400000 100000", 4),              // the smaller limit wins
        (2, 8, nil, 2),                           // never more than online
        (16, nil, "garbage", 16),                 // unreadable: no quota
        (0, 0, "0 100000", 1),                    // at least one
    ] as [(Int, Int?, String?, Int)])
    func usableCPUs(online: Int, affinity: Int?, cpuMax: String?, expected: Int) {
        #expect(UsableCPUs.count(online: online, affinity: affinity, cpuMax: cpuMax) == expected)
    }
}

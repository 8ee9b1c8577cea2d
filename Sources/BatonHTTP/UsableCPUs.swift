import CSystem
import Glibc

/// How many CPUs this process may really use: the online CPUs, cut to its affinity mask
/// (`taskset`, `sched_setaffinity`, a container's cpuset) and to its cgroup's CPU quota
/// (`cpu.max`, e.g. a container limited to 2 CPUs on a 64-core host). One event loop per
/// usable CPU: more loops than CPUs only take turns (issue 30). `--event-loops` overrides it.
package enum UsableCPUs {
    /// The count for this process now.
    package static func count() -> Int {
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return count(online: online, affinity: affinityCount(), cpuMax: cgroupCPUMax())
    }

    /// The pure rule: the smallest of the online CPUs, the affinity mask's CPUs and the
    /// quota's CPUs (quota / period, rounded up: 1.5 CPUs of quota keep 2 loops busy), at least 1.
    /// - Parameters:
    ///   - cpuMax: the cgroup v2 `cpu.max` text (`"max 100000"`: no quota; `"200000 100000"`: 2
    ///     CPUs), nil when unknown. Anything unreadable counts as no quota.
    package static func count(online: Int, affinity: Int?, cpuMax: String?) -> Int {
        var usable = max(1, online)
        if let affinity, affinity > 0 { usable = min(usable, affinity) }
        if let quota = cpuMax.flatMap(quotaCPUs) { usable = min(usable, quota) }
        return max(1, usable)
    }

    /// The CPUs a `cpu.max` quota allows, rounded up; nil for "max" or anything unreadable.
    static func quotaCPUs(_ text: String) -> Int? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 2, let quota = Int(fields[0]), let period = Int(fields[1]), quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }

    /// The CPUs in this process's affinity mask; nil when it cannot be read.
    private static func affinityCount() -> Int? {
        let count = baton_affinity_cpu_count()
        return count > 0 ? Int(count) : nil
    }

    /// This process's cgroup v2 `cpu.max`, if any (its own cgroup's, from /proc/self/cgroup).
    private static func cgroupCPUMax() -> String? {
        let own = readSmallFile("/proc/self/cgroup")?
            .split(separator: "\n").first { $0.hasPrefix("0::") }
            .map { String($0.dropFirst(3)) }
        if let own, let text = readSmallFile("/sys/fs/cgroup" + (own == "/" ? "" : own) + "/cpu.max") { return text }
        return readSmallFile("/sys/fs/cgroup/cpu.max")
    }

    /// A small text file's contents; nil when it cannot be read.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

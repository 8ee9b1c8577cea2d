import Foundation

/// A task executor with threads of its own, for tests whose timing must not depend on Swift's
/// cooperative pool.
///
/// On a 2-core machine the cooperative pool has 2 threads, and most of this suite's tests block
/// them (synchronous sockets, `waitUntilExit`, polling a file). An async test that needs a
/// timely continuation (a client retrying within the server's grace window, a request that must
/// reach a listener within a deadline) then waits for a free thread for as long as the slowest
/// blocking tests run: up to ~100 s in a full run. Tests that run under this executor
/// (`.ownThreads`, or `withTaskExecutorPreference(TestThreadPool.shared)`) are scheduled on
/// these threads instead, and a blocked one never holds up the others' continuations for long.
package final class TestThreadPool: TaskExecutor, @unchecked Sendable {
    /// The one pool the tests share.
    package static let shared = TestThreadPool(threads: 64)

    private let condition = NSCondition()
    private var queued: [UnownedJob] = []

    private init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "test-pool-\(index)"
            thread.start()
        }
    }

    /// Queues `job` for the next free thread of the pool.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        queued.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while queued.isEmpty { condition.wait() }
            let job = queued.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

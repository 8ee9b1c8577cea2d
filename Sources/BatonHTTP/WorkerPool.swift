import BatonSync

/// Threads that run requests which may block (argon2id, waiting for a durable commit), so
/// the event loops never wait on them. Threads start on demand, up to `maxThreads`, and stay;
/// every concurrent exchange that waits for its commit needs its own thread to join a shared
/// one (an exchange on SQLite waits on none: `LoopAnswer.later`).
final class WorkerPool: @unchecked Sendable {
    private let lock = ConditionLock()
    private var jobs: [@Sendable () -> Void] = []
    private var jobsStart = 0
    private var idle = 0
    private var threads = 0
    private var stopping = false
    private let maxThreads: Int

    init(maxThreads: Int) { self.maxThreads = maxThreads }

    /// Runs `job` on a worker.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let (startThread, anyoneIdle) = lock.withLock { () -> (Bool, Bool) in
            jobs.append(job)
            let start = idle == 0 && threads < maxThreads
            if start { threads += 1 }
            return (start, idle > 0)
        }
        // Woken after the mutex is free, so the worker does not wake only to wait for it.
        if anyoneIdle { lock.signal() }
        if startThread { spawn { self.work() } }
    }

    /// Lets queued jobs finish, then ends the workers.
    func stop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
    }

    private func work() {
        while let job = next() { job() }
    }

    /// The next job, or nil when stopping with nothing left.
    private func next() -> (@Sendable () -> Void)? {
        lock.withLock {
            while true {
                if jobsStart < jobs.count {
                    let job = jobs[jobsStart]
                    jobsStart += 1
                    if jobsStart > 1024, jobsStart * 2 > jobs.count {  // compact the consumed prefix
                        jobs.removeFirst(jobsStart)
                        jobsStart = 0
                    }
                    return job
                }
                if stopping {
                    threads -= 1
                    return nil
                }
                idle += 1
                lock.wait()
                idle -= 1
            }
        }
    }
}

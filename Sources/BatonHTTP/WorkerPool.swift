import Glibc

/// Threads that run requests which may block (argon2id, a durable group commit), so the
/// event loops never wait on them. Threads start on demand, up to `maxThreads`, and stay;
/// every concurrent exchange needs its own thread to join a shared commit.
final class WorkerPool: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [@Sendable () -> Void] = []
    private var jobsStart = 0
    private var idle = 0
    private var threads = 0
    private var stopping = false
    private let maxThreads: Int

    init(maxThreads: Int) {
        self.maxThreads = maxThreads
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `job` on a worker.
    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let startThread = idle == 0 && threads < maxThreads
        if startThread { threads += 1 }
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        if startThread { spawn { self.work() } }
    }

    /// Lets queued jobs finish, then ends the workers.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    private func work() {
        pthread_mutex_lock(mutex)
        while true {
            if jobsStart < jobs.count {
                let job = jobs[jobsStart]
                jobsStart += 1
                if jobsStart > 1024, jobsStart * 2 > jobs.count {  // compact the consumed prefix
                    jobs.removeFirst(jobsStart)
                    jobsStart = 0
                }
                pthread_mutex_unlock(mutex)
                job()
                pthread_mutex_lock(mutex)
                continue
            }
            if stopping { break }
            idle += 1
            pthread_cond_wait(condition, mutex)
            idle -= 1
        }
        threads -= 1
        pthread_mutex_unlock(mutex)
    }
}

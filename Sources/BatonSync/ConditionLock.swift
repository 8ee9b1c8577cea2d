import Glibc

/// A pthread mutex with one condition variable, for threads that sleep until work arrives
/// (the group-commit writer, the worker pool, shutdown). `Locked` covers state that is
/// never waited on.
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` holding the mutex.
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (mutex held) until signalled; callers re-check their predicate in a loop.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits (mutex held) until signalled or `milliseconds` pass.
    package func wait(milliseconds: Int) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = deadline.tv_nsec + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_cond_timedwait(condition, mutex, &deadline)
    }

    /// Sets `flag` (a stop request) under the mutex and wakes the waiter.
    /// - Returns: whether this call set it (false when it was already set).
    package func raise(_ flag: inout Bool) -> Bool {
        withLock {
            defer { flag = true }
            signal()
            return !flag
        }
    }

    /// Wakes one waiter (mutex held or not).
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    package func broadcast() { pthread_cond_broadcast(condition) }
}

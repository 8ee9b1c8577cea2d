import Glibc

/// A pthread mutex with one condition variable: the writer thread sleeps on it until work
/// arrives. Kept minimal; `Synchronization.Mutex` covers the places that never wait.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
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
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (mutex held) until signalled; callers re-check their predicate in a loop.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes one waiter.
    func signal() { pthread_cond_signal(condition) }
}

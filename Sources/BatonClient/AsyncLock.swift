import Foundation

/// A FIFO async lock: `acquire()` suspends (never blocks a thread) until the lock is free.
final class AsyncLock: @unchecked Sendable {
    private let mutex = NSLock()
    private var isHeld = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Waits for the lock; the handle releases it.
    func acquire() async -> CredentialStoreLock {
        await withCheckedContinuation { continuation in
            mutex.lock()
            if isHeld {
                waiters.append(continuation)
                mutex.unlock()
            } else {
                isHeld = true
                mutex.unlock()
                continuation.resume()
            }
        }
        return Handle(owner: self)
    }

    /// Hands the lock to the next waiter, or frees it.
    fileprivate func release() {
        mutex.lock()
        if waiters.isEmpty {
            isHeld = false
            mutex.unlock()
        } else {
            let next = waiters.removeFirst()
            mutex.unlock()
            next.resume()
        }
    }

    private final class Handle: CredentialStoreLock, @unchecked Sendable {
        private let owner: AsyncLock
        private let mutex = NSLock()
        private var released = false

        init(owner: AsyncLock) { self.owner = owner }

        func unlock() {
            mutex.lock()
            let first = !released
            released = true
            mutex.unlock()
            if first { owner.release() }
        }

        deinit { unlock() }
    }
}

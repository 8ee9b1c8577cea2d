import Foundation

/// At most `limit` holders at once; the others wait in order, without blocking a thread.
final class ConcurrencyLimiter: @unchecked Sendable {
    private let mutex = NSLock()
    private var available: Int
    private var waiters: [(id: UUID, continuation: CheckedContinuation<Void, Error>)] = []

    /// A limiter with `limit` permits.
    init(limit: Int) { available = limit }

    /// Waits for a permit.
    /// - Throws: `.cancelled` when the waiting task is cancelled.
    func acquire() async throws(BatonClientError) {
        let id = UUID()
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                    mutex.lock()
                    if Task.isCancelled {
                        mutex.unlock()
                        continuation.resume(throwing: CancellationError())
                    } else if available > 0 {
                        available -= 1
                        mutex.unlock()
                        continuation.resume()
                    } else {
                        waiters.append((id, continuation))
                        mutex.unlock()
                    }
                }
            } onCancel: {
                mutex.lock()
                let index = waiters.firstIndex { $0.id == id }
                let waiter = index.map { waiters.remove(at: $0) }
                mutex.unlock()
                waiter?.continuation.resume(throwing: CancellationError())
            }
        } catch {
            throw .cancelled
        }
    }

    /// Returns a permit (to the next waiter, if any).
    func release() {
        mutex.lock()
        if waiters.isEmpty {
            available += 1
            mutex.unlock()
        } else {
            let next = waiters.removeFirst()
            mutex.unlock()
            next.continuation.resume()
        }
    }
}

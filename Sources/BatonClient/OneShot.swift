import Foundation

/// A value delivered once to one waiter: the first `fulfil` wins, later ones are ignored, and a
/// value fulfilled before the wait began is handed over at once. Lets a caller stop waiting
/// (on cancellation) for a task that must go on.
final class OneShot<Value: Sendable>: @unchecked Sendable {
    private let mutex = NSLock()
    private var value: Value?
    private var isFulfilled = false
    private var waiter: CheckedContinuation<Value, Never>?

    /// Waits for the value; `start` runs once the waiter is registered (it begins the work that
    /// fulfils).
    func wait(then start: () -> Void) async -> Value {
        await withCheckedContinuation { continuation in
            mutex.lock()
            if isFulfilled, let value {
                mutex.unlock()
                continuation.resume(returning: value)
                return
            }
            waiter = continuation
            mutex.unlock()
            start()
        }
    }

    /// Delivers `value` unless one was delivered already.
    func fulfil(_ value: Value) {
        mutex.lock()
        guard !isFulfilled else {
            mutex.unlock()
            return
        }
        isFulfilled = true
        self.value = value
        let waiter = self.waiter
        self.waiter = nil
        mutex.unlock()
        waiter?.resume(returning: value)
    }
}

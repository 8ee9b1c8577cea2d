import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request in flight that can be cancelled: a URLSession task, or a round trip through a
/// simulated network (`RoundTripTask`).
protocol CancellableRequest {
    /// Cancels the request (its answer becomes `.cancelled` unless it came first).
    func cancel()
}

extension URLSessionTask: CancellableRequest {}

/// The requests in flight (URLSession tasks, or simulated round trips), so that a cancelled
/// Swift task or a logout can cancel them.
final class InFlightRequests: @unchecked Sendable {
    private let mutex = NSLock()
    private var tasks: [UUID: (task: any CancellableRequest, cancellableAtLogout: Bool)] = [:]
    private var cancelledEarly: Set<UUID> = []
    private var logouts = 0

    /// Counts `cancelAll()` calls: a request that saw another value before it queued was cancelled.
    var epoch: Int {
        mutex.lock()
        defer { mutex.unlock() }
        return logouts
    }

    /// Registers a task; cancels it at once if its Swift task was cancelled before it started.
    /// - Returns: false, registering nothing, for a task cancellable at logout whose `epoch` is
    ///   not current (a logout came after it was decided): it must not be started.
    func insert(_ task: any CancellableRequest, id: UUID, cancellableAtLogout: Bool, epoch: Int) -> Bool {
        mutex.lock()
        if cancellableAtLogout && epoch != logouts {
            mutex.unlock()
            return false
        }
        let cancelled = cancelledEarly.remove(id) != nil
        if !cancelled { tasks[id] = (task, cancellableAtLogout) }
        mutex.unlock()
        if cancelled { task.cancel() }
        return true
    }

    /// Forgets a finished task, and its early cancellation if it never got to start (its
    /// Swift task cancelled, then a logout refused it: F15, once a leak per such request).
    func remove(id: UUID) {
        mutex.lock()
        tasks[id] = nil
        cancelledEarly.remove(id)
        mutex.unlock()
    }

    /// Whether nothing is held (tests: no request leaves anything behind).
    var isEmpty: Bool {
        mutex.lock()
        defer { mutex.unlock() }
        return tasks.isEmpty && cancelledEarly.isEmpty
    }

    /// Cancels one task (its Swift task was cancelled).
    func cancel(id: UUID) {
        mutex.lock()
        let entry = tasks.removeValue(forKey: id)
        if entry == nil { cancelledEarly.insert(id) }
        mutex.unlock()
        entry?.task.cancel()
    }

    /// Cancels every task registered as cancellable at logout.
    func cancelAll() {
        mutex.lock()
        logouts += 1
        let doomed = tasks.filter { $0.value.cancellableAtLogout }
        for id in doomed.keys { tasks[id] = nil }
        mutex.unlock()
        for entry in doomed.values { entry.task.cancel() }
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One round trip through a simulated network (`ClientEnvironment.Network.roundTrip`) as
/// `InFlightRequests` holds it, in the place of a URLSession task: cancelling it cancels the
/// task that runs the round trip, or, when it comes first, keeps that task from starting (as a
/// data task cancelled before `resume()` never sends).
final class RoundTripTask: CancellableRequest, @unchecked Sendable {
    // @unchecked: every stored property is guarded by `lock`.
    private let lock = NSLock()
    private var task: Task<Result<(Data, HTTPURLResponse), BatonClientError>, Never>?
    private var isCancelled = false

    /// Runs `body` in a task of its own and waits for its answer; `.cancelled` without running
    /// it when `cancel()` came first.
    func run(_ body: @escaping @Sendable () async -> Result<(Data, HTTPURLResponse), BatonClientError>) async
        -> Result<(Data, HTTPURLResponse), BatonClientError> {
        guard let task = start(body) else { return .failure(.cancelled) }
        return await task.value
    }

    /// The task running `body`, made under the lock so that a concurrent `cancel()` sees it;
    /// nil when cancelled already.
    private func start(_ body: @escaping @Sendable () async -> Result<(Data, HTTPURLResponse), BatonClientError>)
        -> Task<Result<(Data, HTTPURLResponse), BatonClientError>, Never>? {
        lock.lock()
        defer { lock.unlock() }
        guard !isCancelled else { return nil }
        let task = Task(operation: body)
        self.task = task
        return task
    }

    /// Cancels the round trip, running or not started yet.
    func cancel() {
        lock.lock()
        isCancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One exchange attempt's request, in flight until its answer comes or it is cancelled. Its
/// deadline ends the *waiting*, not the request: the exchange keeps listening to its latest
/// attempt until the next attempt goes out. When no next attempt may go out (the store refused
/// to record its number), the late answer to the last one sent is still read: that answer is
/// the chain's head at the server, and throwing it away would leave a Bearer chain's next
/// exchange to come after the retry grace, as reuse (baton-sim seed 215745220614506).
final class ExchangeAttempt: @unchecked Sendable {
    typealias Answer = Result<(Data, HTTPURLResponse), BatonClientError>

    /// The number the attempt carried (`X-Baton-Exchange-Attempt`).
    let number: Int
    /// When it was sent, on the monotonic clock.
    let sentAt: ContinuousClock.Instant
    private let mutex = NSLock()
    private var finished: Answer?
    private var answeredAt: ContinuousClock.Instant?
    private var task: Task<Answer, Never>?

    /// Starts sending: `send` runs in a task of its own, which a deadline does not cancel.
    /// `clock` times the answer.
    init(number: Int, clock: @escaping @Sendable () -> ContinuousClock.Instant,
         send: @escaping @Sendable () async throws(BatonClientError) -> (Data, HTTPURLResponse)) {
        self.number = number
        sentAt = clock()
        let task = Task { [weak self] () -> Answer in
            let answer: Answer
            do throws(BatonClientError) { answer = .success(try await send()) } catch { answer = .failure(error) }
            self?.finish(answer, at: clock())
            return answer
        }
        mutex.lock()
        self.task = task
        mutex.unlock()
    }

    /// The answer, if it came already (without waiting).
    var answer: Answer? {
        mutex.lock()
        defer { mutex.unlock() }
        return finished
    }

    /// How long the answer took to come, once it came (a late one included: the network's
    /// time, whenever it was read).
    var answerTime: Duration? {
        mutex.lock()
        defer { mutex.unlock() }
        return answeredAt.map { $0 - sentAt }
    }

    /// Stops the request (the next attempt went out, or the exchange ended).
    func cancel() {
        currentTask?.cancel()
    }

    private var currentTask: Task<Answer, Never>? {
        mutex.lock()
        defer { mutex.unlock() }
        return task
    }

    /// The answer, or nil once `timeout` has passed on `environment`'s clock (the request goes
    /// on). A deadline that fires late means the process was stopped meanwhile (iOS suspended the
    /// app, SIGSTOP): the answer may be sitting in the socket, committed, so it gets `lateWindow`
    /// more to be read before the deadline counts.
    func answer(within timeout: Duration, environment: ClientEnvironment, lateBy: Duration, lateWindow: Duration) async -> Answer? {
        if let answer { return answer }
        guard let task = currentTask else { return nil }
        let waiter = OneShot<Answer?>()
        let deadline = Task {
            let started = environment.monotonicNow()
            try? await environment.sleep(timeout)
            if !Task.isCancelled, environment.monotonicNow() - started > timeout + lateBy {
                try? await environment.sleep(lateWindow)
            }
            waiter.fulfil(nil)  // ignored once the answer came
        }
        defer { deadline.cancel() }
        // A cancelled caller stops waiting at once, and the request with it.
        return await withTaskCancellationHandler {
            await waiter.wait {
                Task { waiter.fulfil(await task.value) }
            }
        } onCancel: {
            waiter.fulfil(nil)
            task.cancel()
        }
    }

    private func finish(_ answer: Answer, at instant: ContinuousClock.Instant) {
        mutex.lock()
        finished = answer
        answeredAt = instant
        mutex.unlock()
    }
}

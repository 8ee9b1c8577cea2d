import Foundation

extension BatonSession {
    /// The session's status now, then each change, for as many subscribers as want it (a
    /// SwiftUI view model, a menu bar item, a logger): each call is a stream of its own that
    /// starts with the current value. The stream ends when its task is cancelled or the session
    /// goes away. Unlike `events`, a late subscriber misses nothing that matters: it gets the
    /// state, not the history.
    public func statusUpdates() -> AsyncStream<SessionStatus> {
        try? restoreIfNeeded()
        let id = environment.newID()
        let (stream, continuation) = makeAsyncStream(of: SessionStatus.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(status)
        statusSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let session = self else { return }
            Task { await session.unsubscribe(id) }
        }
        return stream
    }

    /// Sends the status to every subscriber when it changed.
    func publishStatus() {
        let now = status
        guard now != publishedStatus else { return }
        publishedStatus = now
        for subscriber in statusSubscribers.values { subscriber.yield(now) }
    }

    private func unsubscribe(_ id: UUID) { statusSubscribers[id] = nil }
}

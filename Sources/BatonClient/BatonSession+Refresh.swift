import Foundation

extension BatonSession {
    /// Exchanges the held token now, for background work with a deadline (a `BGAppRefreshTask`,
    /// which has about 30 s; a notification service extension, about the same): returns the
    /// session's status when the exchange ends, when `limit` has passed, or at once when the
    /// calling task is cancelled (the task's expiration handler), whichever comes first
    /// (issue 42, F5: `restore(exchangeNow:)` returned 34 s after its task was cancelled).
    ///
    /// An exchange left behind is safe: it goes on while the process runs, and if iOS suspends
    /// the app first, the next launch repeats it with the same token (the server answers a
    /// repeat with a fresh successor, R3a, and never lets an older attempt replace a later
    /// one, R3b). `refresh` logs nobody out by itself: it returns `.loggedOut` only when the
    /// server said so.
    /// - Parameter limit: how long to wait for the exchange at most; pass a little less than
    ///   the time the system gives (e.g. 25 s of a background refresh's 30).
    @discardableResult
    public func refresh(within limit: Duration) async -> SessionStatus {
        try? restoreIfNeeded()
        for action in apply(.exchangeRequested) {
            if case .wait(let exchange) = action {
                exchangeWaiters += 1
                _ = await Self.outcome(of: exchange, within: limit, sleep: environment.sleep)
                exchangeWaiters -= 1
            }
        }
        return status
    }
}

/// Counts failed logins per username and per client IP and says when to refuse.
///
/// After `maxFailures` failures for one key, each within `window` of the previous one, the
/// key is blocked for `baseDelay`, doubling with every further failure up to `maxDelay`.
/// A throttled attempt hashes no password and does not extend the block. A success clears
/// the username's count (not the IP's: one IP spraying many users stays counted).
/// Pure state with an injected time; the store guards it with a lock.
package struct LoginThrottle: Sendable {
    package var maxFailures = 5
    package var window: Duration = .seconds(15 * 60)
    package var baseDelay: Duration = .seconds(60)
    package var maxDelay: Duration = .seconds(3600)
    /// Entries kept at most; beyond it, entries idle for a whole window are forgotten.
    package var capacity = 100_000

    private struct Entry: Sendable {
        var failures = 0
        var lastFailure = Instant(milliseconds: 0)
        var blockedUntil = Instant(milliseconds: 0)
    }

    private var entries: [String: Entry] = [:]

    package init() {}

    /// How long the caller must wait, or nil when the attempt may proceed.
    package func retryAfter(username: String, ip: String?, now: Instant) -> Duration? {
        let waits = keys(username: username, ip: ip).compactMap { key -> Duration? in
            guard let entry = entries[key], now < entry.blockedUntil else { return nil }
            return entry.blockedUntil - now
        }
        return waits.max()
    }

    /// Counts a failed password check.
    package mutating func recordFailure(username: String, ip: String?, now: Instant) {
        if entries.count >= capacity { forgetIdle(now: now) }
        for key in keys(username: username, ip: ip) {
            var entry = entries[key] ?? Entry()
            if now - entry.lastFailure >= window { entry.failures = 0 }
            entry.failures += 1
            entry.lastFailure = now
            if entry.failures >= maxFailures {
                let doublings = min(entry.failures - maxFailures, 20)
                let delay = min(baseDelay * (1 << doublings), maxDelay)
                entry.blockedUntil = now + delay
            }
            entries[key] = entry
        }
    }

    /// Clears the username's count after a successful login.
    package mutating func recordSuccess(username: String) {
        entries[Self.userKey(username)] = nil
    }

    private func keys(username: String, ip: String?) -> [String] {
        [Self.userKey(username)] + (ip.map { ["ip:" + $0] } ?? [])
    }

    private static func userKey(_ username: String) -> String { "user:" + username.lowercased() }

    private mutating func forgetIdle(now: Instant) {
        entries = entries.filter { now - $0.value.lastFailure < window || now < $0.value.blockedUntil }
    }
}

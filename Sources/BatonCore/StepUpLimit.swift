/// How often one chain may ask for a password check (`/v1/confirm`, `/v1/password`),
/// whatever the password: at most `limit` attempts in any `window`. A thief holding a token
/// has the chain's 5-strike rule against guessing; this bounds what a holder (thief or owner)
/// can spend of the server's password-hash capacity (docs/security.md, finding 5).
/// Pure state with an injected time; the store guards it with a lock.
package struct StepUpLimit: Sendable {
    package var limit = 6
    package var window: Duration = .seconds(60)
    /// Chains tracked at most; beyond it, chains with no attempt inside the window are forgotten.
    package var capacity = 100_000

    /// Per chain: the instants of its attempts inside the window, oldest first.
    private var attempts: [ChainID: [Instant]] = [:]

    package init() {}

    /// Admits an attempt of `chain` now and counts it, or says how long to wait (nothing counted).
    package mutating func admit(_ chain: ChainID, now: Instant) -> Duration? {
        if attempts[chain] == nil, attempts.count >= capacity { forgetIdle(now: now) }
        var recent = (attempts[chain] ?? []).filter { now - $0 < window }
        if recent.count >= limit, let oldest = recent.first {
            attempts[chain] = recent
            return oldest + window - now
        }
        recent.append(now)
        attempts[chain] = recent
        return nil
    }

    /// Gives back the attempt `admit` counted at `now` for `chain`, when it was refused before
    /// any password was checked (the hash queue had no place): such an attempt counts nothing.
    package mutating func refund(_ chain: ChainID, admittedAt now: Instant) {
        guard var recent = attempts[chain], let index = recent.lastIndex(of: now) else { return }
        recent.remove(at: index)
        attempts[chain] = recent
    }

    private mutating func forgetIdle(now: Instant) {
        attempts = attempts.filter { entry in entry.value.contains { now - $0 < window } }
    }
}

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

    private mutating func forgetIdle(now: Instant) {
        attempts = attempts.filter { entry in entry.value.contains { now - $0 < window } }
    }
}

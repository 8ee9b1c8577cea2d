import Synchronization

/// A store's step-up admission, shared by both stores: the per-chain `StepUpLimit` and the
/// password check that counts against it. An attempt the hash queue refused (no place: 429 or
/// 503) checked no password, so it is given back (docs/security.md, the second review).
package final class StepUpGuard: Sendable {
    private let limit = Mutex(StepUpLimit())

    package init() {}

    /// Counts an attempt of `chain` now, or says how long to wait (nothing counted).
    package func admit(_ chain: ChainID, now: Instant) -> Duration? {
        limit.withLock { $0.admit(chain, now: now) }
    }

    /// Checks `password` against the stored `hash` for the attempt `admit` counted at `now`,
    /// in a hash-queue place claimed for the chain and the caller's `address`.
    /// - Throws: as `PasswordHasher.verify`; the attempt is then given back.
    package func checkPassword(
        _ password: String, against hash: String, with hasher: PasswordHasher, chain: ChainID, address: String?, admittedAt now: Instant
    ) throws(BatonError) -> Bool {
        do {
            return try hasher.verify(password, against: hash, for: HashClaimant(address: address, chain: chain))
        } catch {
            limit.withLock { $0.refund(chain, admittedAt: now) }
            throw error
        }
    }
}

import BatonSync

/// The replay check of one accepted DPoP proof (RFC 9449 §11.1), deferred until the proof has
/// earned a place in the replay cache: its key is the key of the chain it presents and that
/// chain is live (not revoked, its user not disabled, its session not over), or, at a login,
/// the password was right. A proof by any other key is refused without taking a
/// place, so nobody can fill the cache with proofs by keys of their own making and so stop
/// every bound client (docs/dpop.md, "The replay cache").
///
/// The first `outcome()` remembers the proof; later calls for the same request (a transaction
/// retried, the read and write halves of one operation) return that first outcome.
package final class ProofReplayClaim: Sendable, Equatable {
    /// What the replay cache said.
    package enum Outcome: Sendable, Equatable {
        /// Not seen before: remembered now, the proof may be accepted.
        case fresh
        /// Seen within the window: a replay, to be refused.
        case replayed
        /// Not seen, but the cache is full: not remembered, so not accepted (503).
        case full
        /// Not seen, but the proof's key holds its share of the cache: not remembered, so not
        /// accepted (429, this key only).
        case overShare
    }

    /// SHA-256 of the key's thumbprint and the proof's `jti`: what the database records for
    /// a bound chain's state-changing request (`proof_replays`), so that such a proof is
    /// accepted once across instances and restarts too.
    package let digest: [UInt8]
    /// Until when the proof could still be accepted (the replay window from its check).
    package let keepUntil: Instant
    private let remember: @Sendable () -> Outcome
    private let first = Locked<Outcome?>(nil)

    /// A claim whose first `outcome()` calls `remember`.
    package init(digest: [UInt8], keepUntil: Instant, _ remember: @escaping @Sendable () -> Outcome) {
        self.digest = digest
        self.keepUntil = keepUntil
        self.remember = remember
    }

    /// Remembers the proof the first time; the same answer afterwards.
    package func outcome() -> Outcome {
        first.withLock { first in
            if let first { return first }
            let outcome = remember()
            first = outcome
            return outcome
        }
    }

    /// One request's claim equals itself only.
    package static func == (lhs: ProofReplayClaim, rhs: ProofReplayClaim) -> Bool { lhs === rhs }
}

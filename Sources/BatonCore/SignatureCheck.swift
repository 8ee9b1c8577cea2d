import Synchronization

/// A proof's signature check, put off until the chain the token names is known (issue 28,
/// finding 3). A verify's proof is checked in every other respect by the API; the signature,
/// about 90 µs of a verify's CPU where the rest costs a few, only once the proof's key has
/// proved to be the chain's (a proof by another key is refused for that alone, so its
/// signature is never worth checking) and the chain is within its budget of refused proofs
/// (`PresentedProof.refusal(forChainKey:overBudget:)`).
///
/// Runs its check at most once; later calls answer what the first found. Equal only to itself.
package final class SignatureCheck: Sendable, Equatable {
    /// Why a check failed: a `ProofError`'s `failure` and description.
    package struct Failure: Sendable, Equatable {
        package var failure: String
        package var description: String

        package init(failure: String, description: String) {
            self.failure = failure
            self.description = description
        }
    }

    private let check: @Sendable () -> Failure?
    /// The first call's answer (`.some(nil)`: verified); one request's, so never contended.
    private let answer = Mutex<BatonError??>(nil)

    /// A check that runs `check` (nil: the signature verifies).
    package init(_ check: @escaping @Sendable () -> Failure?) {
        self.check = check
    }

    /// The proof's answer: `overBudget`'s refusal, else the check's (nil when the signature
    /// verifies). Decided by the first call; later calls (verify looks at a proof twice when it
    /// reads the chain) answer the same.
    package func refusal(overBudget: () -> BatonError?) -> BatonError? {
        answer.withLock { answer in
            if let known = answer { return known }
            let found: BatonError?
            if let refusal = overBudget() {
                found = refusal
            } else if let failed = check() {
                found = .invalidDPoPProof(failure: failed.failure, description: failed.description)
            } else {
                found = nil
            }
            answer = .some(found)
            return found
        }
    }

    package static func == (left: SignatureCheck, right: SignatureCheck) -> Bool { left === right }
}

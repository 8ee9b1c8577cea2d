import Synchronization

/// A proof's signature check, put off until the chain the token names is known (issue 28,
/// finding 3). A verify's proof is checked in every other respect by the API; the signature,
/// about 90 µs of a verify's CPU where the rest costs a few, only once the proof's key has
/// proved to be the chain's (a proof by another key is refused for that alone, so its
/// signature is never worth checking) and the chain's budget of failed checks allows it
/// (`PresentedProof.refusal(forChainKey:signatures:)`).
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

    /// The proof's answer within `budget`: the budget's refusal, or the check's (nil when the
    /// signature verifies; a failure is told to the budget). Decided by the first call; later
    /// calls (verify looks at a proof twice when it reads the chain) answer the same.
    package func refusal(within budget: SignatureBudget) -> BatonError? {
        answer.withLock { answer in
            if let known = answer { return known }
            let found: BatonError?
            if let refusal = budget.refusal() {
                found = refusal
            } else if let failed = check() {
                budget.noteFailure()
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

/// What a chain's proofs may still cost: asked before a signature is checked, told of each
/// check that failed (`LineageBackend`'s per-chain budget; `.unlimited` where none applies).
package struct SignatureBudget {
    /// The refusal to answer instead of checking (the chain is over its budget), or nil to check.
    package var refusal: () -> BatonError?
    /// Called after a check failed.
    package var noteFailure: () -> Void

    package init(refusal: @escaping () -> BatonError?, noteFailure: @escaping () -> Void) {
        self.refusal = refusal
        self.noteFailure = noteFailure
    }

    /// Every check runs.
    package static var unlimited: SignatureBudget { SignatureBudget(refusal: { nil }, noteFailure: {}) }
}

/// How a request presented its token and what its DPoP proof (RFC 9449) showed, as the API
/// found it before calling the operation. The API checks the proof (signature, `htm`, `htu`,
/// `ath`, freshness, replay); the operation compares the result with the chain's key (§4.3
/// check 12.2) through `refusal(forChainKey:)`, before any rule runs.
package enum PresentedProof: Sendable, Equatable {
    /// `Authorization: Bearer` (any `DPoP` header is not looked at: RFC 9449 §7.2, a bound
    /// token presented as Bearer is refused whatever else the request carries).
    case bearer
    /// `Authorization: DPoP` without a `DPoP` header.
    case missing
    /// `Authorization: DPoP` with a proof that passed every check; the key's thumbprint.
    case verified(jkt: String)
    /// `Authorization: DPoP` with a proof that passed every check but its signature, which
    /// `check` makes once the proof's key `jkt` proves to be the chain's (verify: a proof by
    /// another key, or for a chain over its budget of refused proofs, costs no signature check).
    case awaitingSignature(jkt: String, check: SignatureCheck)
    /// `Authorization: DPoP` with a proof that failed a check: `ProofError.failure`, its
    /// description, and whether the answer is "use the nonce" (§8) rather than "invalid".
    case failed(failure: String, description: String, needsNonce: Bool)

    /// Why this presentation may not use a chain bound to `jkt` (nil: a bearer chain), or nil
    /// when it may. A bearer chain is used as Bearer only: `Authorization: DPoP` for it is
    /// refused (`session_not_bound`), so a client that believes its session bound finds out.
    ///
    /// A proof awaiting its signature check (`awaitingSignature`) by the chain's key is
    /// checked here, unless `overBudget` answers a refusal instead.
    package func refusal(forChainKey jkt: String?, overBudget: () -> BatonError? = { nil }) -> BatonError? {
        guard let jkt else {
            if self == .bearer { return nil }
            return .invalidDPoPProof(failure: "session_not_bound", description: "this session is not bound to a key; present its token as Bearer")
        }
        switch self {
        case .bearer:
            return .invalidDPoPProof(failure: "bearer_for_bound_chain", description: "this session is bound to a key; present its token as DPoP with a proof")
        case .missing:
            return .invalidDPoPProof(failure: "proof_missing", description: "no DPoP header")
        case .verified(let presented):
            // Thumbprints are public values; equality needs no constant time.
            return presented == jkt ? nil : Self.keyMismatch
        case .awaitingSignature(let presented, let check):
            guard presented == jkt else { return Self.keyMismatch }
            return check.refusal(overBudget: overBudget)
        case .failed(let failure, let description, let needsNonce):
            return needsNonce ? .useDPoPNonce(failure: failure, description: description)
                              : .invalidDPoPProof(failure: failure, description: description)
        }
    }

    private static var keyMismatch: BatonError {
        .invalidDPoPProof(failure: "key_mismatch", description: "the proof is signed by another key than the session's")
    }

    /// The scheme name for the audit (`bearer`, `dpop`).
    package var scheme: String { self == .bearer ? "bearer" : "dpop" }
}

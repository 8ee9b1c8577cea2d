/// Why a DPoP proof (RFC 9449) was refused: one case per check of §4.3, so the audit and the
/// metrics can say exactly what failed (`failure`), and the API can answer with the right
/// challenge (`answer`). No case carries a token or anything derived from one.
package enum ProofError: Error, Equatable, Sendable {
    /// No `DPoP` header where one is needed.
    case missing
    /// More than one `DPoP` header (§4.3 check 1); for the HTTP layer, which sees the fields.
    case multipleHeaders
    /// The header value is longer than the policy's limit.
    case tooLong(limit: Int)
    /// Not a compact JWS: `part` (header, payload, signature) is missing or not base64url,
    /// or the header or payload is not a JSON object.
    case malformed(part: String)
    /// The header or payload gives the member `name` twice.
    case duplicateMember(part: String, name: String)
    /// The header has no `typ`, or one other than `dpop+jwt` (§4.3 check 4).
    case wrongType(String?)
    /// `alg` is absent, `none`, symmetric, or not on the allowlist (§4.3 check 5).
    case algorithmNotAllowed(String?)
    /// The header has `crit`: no extension is understood, so none may be required (RFC 7515 §4.1.11).
    case criticalHeader
    /// The header has no `jwk` object.
    case keyMissing
    /// The `jwk` holds the private member `member` (§4.3 check 7).
    case privateKeyInJWK(member: String)
    /// The `jwk` is not a public key of `alg`'s type; `reason` says what is wrong.
    case invalidKey(reason: String)
    /// The signature does not verify with the `jwk` (§4.3 check 6).
    case badSignature
    /// The claim `name` is absent (§4.3 check 3).
    case claimMissing(String)
    /// The claim `name` has the wrong type or form.
    case claimInvalid(String)
    /// `htm` is not the request's method (§4.3 check 8).
    case methodMismatch(expected: String, found: String)
    /// `htu`, normalized, is not the request's URI (§4.3 check 9); both normalized.
    case urlMismatch(expected: String, found: String)
    /// A token was presented and the proof has no `ath` (§4.3 check 12).
    case tokenHashMissing
    /// `ath` is not the hash of the presented token (§4.3 check 12).
    case tokenHashMismatch
    /// `iat` is further in the past than the policy allows (§4.3 check 11).
    case issuedTooLongAgo(seconds: Int64)
    /// `iat` is further in the future than the policy allows (§4.3 check 11).
    case issuedInFuture(seconds: Int64)
    /// The policy wants a server nonce and the proof has none (§8).
    case nonceRequired
    /// The proof's `nonce` is not one this server (or a sibling with its key) issued lately (§8).
    case nonceInvalid
    /// This proof's `jti` was accepted before, within the window (§11.1).
    case replayed
    /// The replay cache is full: the proof cannot be remembered, so it is not accepted.
    case replayCacheFull

    /// How the API answers a refused proof.
    package enum Answer: Equatable, Sendable {
        /// 401 (400 at login) with `error="invalid_dpop_proof"` (RFC 9449 §7.1).
        case invalidProof
        /// 401 (400 at login) with `error="use_dpop_nonce"` and a fresh `DPoP-Nonce` (§8).
        case useNonce
        /// 503 with `Retry-After`: the server cannot check proofs now; the client did nothing wrong.
        case unavailable
    }

    /// The answer this failure calls for.
    package var answer: Answer {
        switch self {
        case .nonceRequired, .nonceInvalid: .useNonce
        case .replayCacheFull: .unavailable
        default: .invalidProof
        }
    }

    /// A stable snake_case name of the failed check, for the audit's "what failed" and metric labels.
    package var failure: String {
        switch self {
        case .missing: "proof_missing"
        case .multipleHeaders: "multiple_proofs"
        case .tooLong: "proof_too_long"
        case .malformed: "malformed_proof"
        case .duplicateMember: "duplicate_member"
        case .wrongType: "typ_invalid"
        case .algorithmNotAllowed: "alg_not_allowed"
        case .criticalHeader: "crit_not_understood"
        case .keyMissing: "jwk_missing"
        case .privateKeyInJWK: "jwk_private_key"
        case .invalidKey: "jwk_invalid"
        case .badSignature: "signature_invalid"
        case .claimMissing: "claim_missing"
        case .claimInvalid: "claim_invalid"
        case .methodMismatch: "htm_mismatch"
        case .urlMismatch: "htu_mismatch"
        case .tokenHashMissing: "ath_missing"
        case .tokenHashMismatch: "ath_mismatch"
        case .issuedTooLongAgo: "iat_too_old"
        case .issuedInFuture: "iat_in_future"
        case .nonceRequired: "nonce_required"
        case .nonceInvalid: "nonce_invalid"
        case .replayed: "jti_replayed"
        case .replayCacheFull: "replay_cache_full"
        }
    }
}

extension ProofError: CustomStringConvertible {
    /// One sentence for a log line or an `error_description` (RFC 6750 §3).
    package var description: String {
        switch self {
        case .missing: "The request has no DPoP proof."
        case .multipleHeaders: "The request has more than one DPoP header."
        case .tooLong(let limit): "The DPoP proof is longer than \(limit) bytes."
        case .malformed(let part): "The DPoP proof's \(part) is malformed."
        case .duplicateMember(let part, let name): "The DPoP proof's \(part) gives '\(name)' twice."
        case .wrongType(let found): found.map { "The DPoP proof's typ is '\($0)', not 'dpop+jwt'." } ?? "The DPoP proof has no typ."
        case .algorithmNotAllowed(let found): found.map { "The DPoP proof's alg '\($0)' is not allowed." } ?? "The DPoP proof has no alg."
        case .criticalHeader: "The DPoP proof has a crit header, which is not supported."
        case .keyMissing: "The DPoP proof has no jwk."
        case .privateKeyInJWK(let member): "The DPoP proof's jwk holds the private member '\(member)'."
        case .invalidKey(let reason): "The DPoP proof's jwk is invalid: \(reason)."
        case .badSignature: "The DPoP proof's signature does not verify with its jwk."
        case .claimMissing(let name): "The DPoP proof has no \(name) claim."
        case .claimInvalid(let name): "The DPoP proof's \(name) claim is invalid."
        case .methodMismatch(let expected, let found): "The DPoP proof's htm is '\(found)', the request's method is '\(expected)'."
        case .urlMismatch(let expected, let found): "The DPoP proof's htu is '\(found)', the request's URI is '\(expected)'."
        case .tokenHashMissing: "The DPoP proof has no ath claim for the presented token."
        case .tokenHashMismatch: "The DPoP proof's ath does not match the presented token."
        case .issuedTooLongAgo(let seconds): "The DPoP proof was issued \(seconds) s ago, too long ago."
        case .issuedInFuture(let seconds): "The DPoP proof was issued \(seconds) s in the future."
        case .nonceRequired: "The DPoP proof has no nonce."
        case .nonceInvalid: "The DPoP proof's nonce is not current."
        case .replayed: "The DPoP proof was used before."
        case .replayCacheFull: "The server cannot remember more DPoP proofs now."
        }
    }
}

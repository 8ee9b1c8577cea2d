/// Why a subject token was refused: `POST /v1/token-exchange` answers 400 `invalid_grant`
/// (RFC 8693 §2.2.2, RFC 6749 §5.2) with `description` as `error_description`, and the
/// security log and the audit trail record `failure`. Each case is one rule of OIDC Core
/// §3.1.3.7 or RFC 7523 §3, and one negative test (docs/security.md).
package enum SubjectTokenRefusal: Error, Equatable, CustomStringConvertible {
    /// Not a compact JWS with JSON header and claims, or a claim of the wrong JSON type.
    case malformed(String)
    /// No configured issuer has this `iss` (compared exactly).
    case unknownIssuer
    /// The issuer's tokens are of the other kind (`subject_token_type`).
    case wrongTokenType
    /// `alg` is not one this issuer allows (`none` and HMAC never are).
    case algorithmNotAllowed(String)
    /// A `crit` header: no extension is understood (RFC 7515 §4.1.11).
    case criticalHeader
    /// `typ` says an access token (RFC 9068 `at+jwt`): not an identity assertion (RFC 8725 §3.11).
    case accessTokenType
    /// No key of the provider's set has this `kid` (or, without `kid`, the set has several keys).
    case unknownKey
    /// The signature does not verify.
    case badSignature
    /// `aud` does not contain an accepted audience, or `azp` is missing or not accepted.
    case wrongAudience(String)
    /// `exp`, `nbf`, `iat` or `auth_time` out of bounds.
    case expired, notYetValid, tooOld, issuedInFuture
    /// `sub` missing, empty, too long or with control characters.
    case badSubject
    /// The ID token's `nonce` is not the one for the proof's key.
    case nonceMismatch
    /// The assertion's `cnf.jkt` is missing or not the proof's key.
    case keyMismatch
    /// The assertion has no `jti`.
    case missingJTI
    /// The token (or the assertion's `jti`) was already exchanged.
    case replayed

    /// The machine-readable name (audit detail, security log).
    package var failure: String {
        switch self {
        case .malformed: "malformed"
        case .unknownIssuer: "unknown_issuer"
        case .wrongTokenType: "wrong_token_type"
        case .algorithmNotAllowed: "algorithm_not_allowed"
        case .criticalHeader: "critical_header"
        case .accessTokenType: "access_token_type"
        case .unknownKey: "unknown_key"
        case .badSignature: "bad_signature"
        case .wrongAudience: "wrong_audience"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .tooOld: "too_old"
        case .issuedInFuture: "issued_in_future"
        case .badSubject: "bad_subject"
        case .nonceMismatch: "nonce_mismatch"
        case .keyMismatch: "key_mismatch"
        case .missingJTI: "missing_jti"
        case .replayed: "replayed"
        }
    }

    package var description: String {
        switch self {
        case .malformed(let what): "The subject token is malformed: \(what)."
        case .unknownIssuer: "The subject token's issuer (iss) is not one this service accepts."
        case .wrongTokenType: "The subject token's issuer issues tokens of the other subject_token_type."
        case .algorithmNotAllowed(let alg): "The subject token's algorithm '\(alg)' is not allowed for its issuer."
        case .criticalHeader: "The subject token has a 'crit' header, which is not supported."
        case .accessTokenType: "The subject token's typ says it is an access token (at+jwt), not an ID token or assertion."
        case .unknownKey: "The subject token's key (kid) is not in its issuer's key set."
        case .badSignature: "The subject token's signature does not verify."
        case .wrongAudience(let what): "The subject token's audience is not accepted: \(what)."
        case .expired: "The subject token has expired (exp)."
        case .notYetValid: "The subject token is not valid yet (nbf)."
        case .tooOld: "The subject token was issued too long ago (iat)."
        case .issuedInFuture: "The subject token's iat or auth_time is in the future."
        case .badSubject: "The subject token's sub is missing, empty, longer than 255 bytes or has control characters."
        case .nonceMismatch: "The ID token's nonce is not the one for the DPoP proof's key."
        case .keyMismatch: "The assertion's cnf.jkt is missing or is not the DPoP proof's key."
        case .missingJTI: "The assertion has no jti."
        case .replayed: "The subject token was already exchanged."
        }
    }
}

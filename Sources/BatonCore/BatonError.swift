/// Every failure a Baton operation reports. The HTTP layer maps each case to a status and
/// an `ErrorCode` in one place; the CLI prints `message`.
package enum BatonError: Error, Equatable, Sendable {
    /// Not a token we issued (bad format, bad MAC, unknown chain or generation).
    case tokenInvalid
    /// The head's TTL is over; exchange it.
    case tokenExpired
    /// The token was exchanged already (R5: normal for requests in flight).
    case tokenSuperseded
    /// A consumed token was exchanged again: the chain is now revoked (R3).
    case tokenReused
    /// The chain is revoked, with why (R4).
    case chainRevoked(RevocationReason)
    /// The chain is past its absolute life.
    case sessionExpired
    /// The head expired longer ago than the exchange window.
    case exchangeWindowClosed
    /// R3b: an exchange attempt numbered no higher than the attempt that made the chain's head
    /// (`headAttempt`): an attempt the client gave up on, or a copy of one, that arrived late.
    /// Nothing changed; the client's newer attempt decides.
    case exchangeAttemptSuperseded(headAttempt: Int)
    /// RFC 9470: the chain's last authentication is older than the `max_age` (seconds) asked for.
    case insufficientUserAuthentication(maxAge: Int64)
    /// Wrong password or unknown user: deliberately indistinguishable.
    case invalidCredentials
    /// Wrong password for a session's own user (`/v1/confirm`, `/v1/password`): no username was
    /// sent, so the message names only the password; the wire code is still `invalid_credentials`.
    case wrongPassword
    /// Right password, disabled account.
    case accountDisabled
    /// Login throttled; try again after this many seconds.
    case tooManyAttempts(retryAfterSeconds: Int64)
    /// A session's password confirmations (step-up, password change) are over their rate
    /// limit, whether they were right or wrong. The wire code is `too_many_attempts`.
    case tooManyConfirmations(retryAfterSeconds: Int64)
    /// A password check for this session is queued or running already: the next one waits
    /// its turn (nothing failed). The wire code is `too_many_attempts`.
    case confirmationInProgress
    /// The DPoP proof's key holds its share of the replay cache (issue 28, finding 1): this key
    /// is refused for now, nobody else. The wire code is `too_many_attempts`.
    case tooManyProofs(retryAfterSeconds: Int64)
    /// More of this session's DPoP proofs were refused than its budget allows (issue 28,
    /// finding 3): its proofs are refused unchecked for a moment, nobody else's. The wire code
    /// is `too_many_attempts`.
    case tooManyRefusedProofs(retryAfterSeconds: Int64)
    /// An argument failed validation; the text names it.
    case invalidArgument(String)
    /// `user add` for a name that exists.
    case userExists(String)
    /// No such user (admin operations only; login never says this).
    case userNotFound(String)
    /// No such chain (admin operations).
    case chainNotFound(ChainID)
    /// No such live session of the caller's user (`DELETE /v1/sessions/{id}`): the same answer
    /// for another user's chain and for none, so it tells nobody which chains exist.
    case sessionNotFound
    /// DPoP (RFC 9449): a request for a bound chain without a valid proof by the chain's key,
    /// a proof refused at login, or a DPoP presentation of a chain that is not bound. `failure`
    /// is the stable name of what failed (`ProofError.failure`, `key_mismatch`...); nothing
    /// changed. 401 with `WWW-Authenticate: DPoP` (400 at login).
    case invalidDPoPProof(failure: String, description: String)
    /// DPoP §8: the proof needs the server's nonce (`DPoP-Nonce` in the answer).
    case useDPoPNonce(failure: String, description: String)
    /// `baton serve --dpop required` and a login without a proof.
    case dpopRequired
    /// RFC 8693 token exchange: the subject token was refused (`failure` names the rule,
    /// `description` says it), or no account may be made for its identity. 400 `invalid_grant`
    /// (RFC 6749 §5.2); nothing changed.
    case invalidGrant(failure: String, description: String)
    /// Storage is unavailable (busy past the timeout, disk full, I/O error, shutting down).
    case unavailable(String)

    /// The wire code, e.g. `token_reused`.
    package var code: ErrorCode {
        switch self {
        case .tokenInvalid: .tokenInvalid
        case .tokenExpired: .tokenExpired
        case .tokenSuperseded: .tokenSuperseded
        case .tokenReused: .tokenReused
        case .chainRevoked: .chainRevoked
        case .sessionExpired: .sessionExpired
        case .exchangeWindowClosed: .exchangeWindowClosed
        case .exchangeAttemptSuperseded: .exchangeAttemptSuperseded
        case .insufficientUserAuthentication: .insufficientUserAuthentication
        case .invalidCredentials, .wrongPassword: .invalidCredentials
        case .accountDisabled: .accountDisabled
        case .tooManyAttempts, .tooManyConfirmations, .confirmationInProgress, .tooManyProofs, .tooManyRefusedProofs: .tooManyAttempts
        case .invalidArgument: .invalidRequest
        case .userExists: .conflict
        case .userNotFound, .chainNotFound, .sessionNotFound: .notFound
        case .invalidDPoPProof: .invalidDPoPProof
        case .useDPoPNonce: .useDPoPNonce
        case .dpopRequired: .dpopRequired
        case .invalidGrant: .invalidGrant
        case .unavailable: .unavailable
        }
    }

    /// A sentence for humans (the API's `error_description`, the CLI's `Error:` line).
    package var message: String {
        switch self {
        case .tokenInvalid: "The token is malformed, forged or unknown."
        case .tokenExpired: "The token has expired; exchange it for a new one."
        case .tokenSuperseded: "The token was already exchanged; use its successor."
        case .tokenReused: "The token was already exchanged; the session is revoked. Log in again."
        case .chainRevoked(let reason): "The session was revoked (\(reason.rawValue)). Log in again."
        case .sessionExpired: "The session reached its maximum lifetime. Log in again."
        case .exchangeWindowClosed: "The token expired too long ago to be exchanged. Log in again."
        case .exchangeAttemptSuperseded(let headAttempt):
            "A later attempt (\(headAttempt)) of this exchange was answered already; nothing changed. Retry with a higher X-Baton-Exchange-Attempt."
        case .insufficientUserAuthentication(let maxAge):
            "A more recent authentication is required (within \(maxAge) \(maxAge == 1 ? "second" : "seconds")); confirm the password."
        case .invalidCredentials: "Invalid username or password."
        case .wrongPassword: "Invalid password."
        case .accountDisabled: "The account is disabled."
        case .tooManyAttempts(let seconds): "Too many failed password attempts; retry after \(seconds) seconds."
        case .tooManyConfirmations(let seconds):
            "Too many password confirmations for this session; retry after \(seconds) \(seconds == 1 ? "second" : "seconds")."
        case .confirmationInProgress: "A password check for this session is already in progress; retry after 1 second."
        case .tooManyProofs(let seconds): "Too many DPoP proofs by this key within the replay window; retry after \(seconds) seconds."
        case .tooManyRefusedProofs(let seconds):
            "Too many DPoP proofs for this session were refused; retry after \(seconds) seconds."
        case .invalidArgument(let text): text
        case .userExists(let name): "User '\(name)' already exists."
        case .userNotFound(let name): "No user named '\(name)'."
        case .chainNotFound(let id): "No chain with id \(id)."
        case .sessionNotFound: "No such session of yours."
        case .invalidDPoPProof(_, let description): "Invalid DPoP proof: \(description)"
        case .useDPoPNonce(_, let description): "The DPoP proof must carry the server's nonce (DPoP-Nonce): \(description)"
        case .dpopRequired: "This server binds every session to a key: the login needs a DPoP proof."
        case .invalidGrant(_, let description): description
        case .unavailable(let text): "Service unavailable: \(text)"
        }
    }
}

/// Error codes as they appear on the wire (`{"error": "token_reused"}`).
package enum ErrorCode: String, Sendable, CaseIterable {
    case tokenMissing = "token_missing"
    case tokenInvalid = "token_invalid"
    case tokenExpired = "token_expired"
    case tokenSuperseded = "token_superseded"
    case tokenReused = "token_reused"
    case chainRevoked = "chain_revoked"
    case sessionExpired = "session_expired"
    case exchangeWindowClosed = "exchange_window_closed"
    case exchangeAttemptSuperseded = "exchange_attempt_superseded"
    case insufficientUserAuthentication = "insufficient_user_authentication"
    case invalidCredentials = "invalid_credentials"
    case accountDisabled = "account_disabled"
    case tooManyAttempts = "too_many_attempts"
    case invalidRequest = "invalid_request"
    case badRequest = "bad_request"
    case notFound = "not_found"
    case conflict
    case methodNotAllowed = "method_not_allowed"
    case payloadTooLarge = "payload_too_large"
    case unsupportedMediaType = "unsupported_media_type"
    case headersTooLarge = "headers_too_large"
    case invalidDPoPProof = "invalid_dpop_proof"
    case useDPoPNonce = "use_dpop_nonce"
    case dpopRequired = "dpop_required"
    case unavailable
    /// RFC 6749 §5.2: the introspection or revocation caller's client authentication failed.
    case invalidClient = "invalid_client"
    /// RFC 6749 §5.2 / RFC 8693 §2.2.2: the subject token of a token exchange was refused.
    case invalidGrant = "invalid_grant"
}

extension BatonError {
    /// The message without the status's words: an `.unavailable`'s explanation as is, for a
    /// start or command that failed (not an HTTP answer).
    package var detail: String {
        if case .unavailable(let text) = self { return text }
        return message
    }
}

/// Why a chain was revoked: stored in `chains.revoked_reason` and answered as `reason`.
package enum RevocationReason: String, Sendable, CaseIterable, Equatable {
    case reuseDetected = "reuse_detected"
    case forkDetected = "fork_detected"
    case logout
    case evicted
    case loggedInElsewhere = "logged_in_elsewhere"
    case passwordChanged = "password_changed"
    case userDisabled = "user_disabled"
    case admin
    /// The chain's 5th consecutive wrong password at `/v1/confirm` or `/v1/password`.
    case confirmFailed = "confirm_failed"
    /// The user signed this session out from another of their sessions (`DELETE /v1/sessions/{id}`,
    /// `POST /v1/sessions/revoke-others`).
    case signedOut = "signed_out"
    /// An operator retired the token key the chain's head was made with, with `--force`
    /// (`baton admin key retire`, docs/admin.md "Rotating the token key"). Version 8.
    case keyRetired = "key_retired"
}

/// The kind of an audit event (`audit.kind`).
package enum AuditKind: String, Sendable, CaseIterable, Equatable {
    case loginSucceeded = "login_succeeded"
    case loginFailed = "login_failed"
    case loginThrottled = "login_throttled"
    case exchanged
    case exchangeRetried = "exchange_retried"
    case reuseDetected = "reuse_detected"
    case forkDetected = "fork_detected"
    case chainRevoked = "chain_revoked"
    case userCreated = "user_created"
    case userDisabled = "user_disabled"
    case userEnabled = "user_enabled"
    case passwordChanged = "password_changed"
    /// A chain re-confirmed its user's password (`/v1/confirm`, or `/v1/password`'s current password).
    case stepUpSucceeded = "step_up_succeeded"
    /// A wrong or throttled confirmation (detail `reason`: invalid_credentials or too_many_attempts).
    case stepUpFailed = "step_up_failed"
    /// A database without a key fingerprint (one made before schema version 3) recorded the
    /// key it was first started with (detail `fingerprint`, `key_file`).
    case keyRecorded = "key_recorded"
    /// `baton serve --new-key` made another key the database's (detail `previous`,
    /// `fingerprint`, `key_file`): tokens signed with the previous key are invalid.
    case keyReplaced = "key_replaced"
    /// A request for a DPoP-bound chain without a valid proof by the chain's key (detail
    /// `failure`, `scheme`): refused, nothing changed (RFC 9449, docs/dpop.md). Version 6.
    case proofFailed = "proof_failed"
    /// `baton admin key rotate` added a token key that new tokens use from then on (detail
    /// `key_id`, `fingerprint`). Version 8.
    case keyRotated = "key_rotated"
    /// `baton admin key retire` retired a token key: its tokens are refused from then on
    /// (detail `key_id`, `fingerprint`, `revoked_chains`). Version 8.
    case keyRetired = "key_retired"
}

/// R7's device classes; a login names one (default `other`).
package enum DeviceClass: String, Sendable, CaseIterable, Equatable {
    case mobile, desktop, web, other
}

/// Who is asking: recorded on every audit event, and the R3a device check.
package struct RequestContext: Sendable, Equatable {
    /// The client's address as the server determined it (see trusted proxies).
    package var ip: String?
    /// The `User-Agent` header.
    package var userAgent: String?
    /// The device id the client sent (login body, or `X-Device-Id` on exchange).
    package var deviceID: String?
    /// How the token was presented and what its DPoP proof showed (checked by the API before
    /// the operation; the operation compares it with the chain's key).
    package var proof: PresentedProof
    /// The replay check of a verified proof, for the operation to run once the proof's key
    /// proves to be the chain's (or the login's password was right); nil without one.
    package var replayClaim: ProofReplayClaim?
    /// A verify for the gateway that authorizes a state-changing request (a trusted proxy's
    /// `X-Original-Method` other than GET, HEAD or OPTIONS): its proof is recorded durably.
    package var authorizesStateChange = false
    /// The exchange attempt number the client sent (`X-Baton-Exchange-Attempt`, 1 and up), or
    /// nil when it sent none (R3b: an attempt numbered no higher than the one that made the head
    /// is answered without touching the head).
    package var exchangeAttempt: Int?

    package init(ip: String? = nil, userAgent: String? = nil, deviceID: String? = nil, proof: PresentedProof = .bearer,
                 replayClaim: ProofReplayClaim? = nil) {
        self.ip = ip
        self.userAgent = userAgent
        self.deviceID = deviceID
        self.proof = proof
        self.replayClaim = replayClaim
    }
}

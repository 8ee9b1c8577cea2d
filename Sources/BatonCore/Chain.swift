/// A chain as its `chains` row holds it: enough to decide every rule in O(1).
package struct ChainHead: Sendable, Equatable {
    package var id: ChainID
    package var userID: Int64
    package var deviceID: String
    package var deviceClass: DeviceClass
    package var createdAt: Instant
    /// The head's generation; every lower generation was exchanged (or R3a-replaced).
    package var generation: Int
    /// SHA-256 of the head token.
    package var hash: [UInt8]
    package var issuedAt: Instant
    package var expiresAt: Instant
    /// Whether the head was ever presented (verify, exchange or logout): R3a needs "never".
    package var presented: Bool
    /// Set once the chain is revoked.
    package var revocation: RevocationReason?
    /// The last active authentication: the login, or the last successful confirmation (RFC 9470
    /// `auth_time`). Exchanges keep it.
    package var authTime: Instant
    /// Wrong passwords presented by this chain since its last successful confirmation.
    package var confirmFailures: Int
    /// Whether the chain's user is disabled (`users.disabled_at`), read with the row. Disabling
    /// revokes the user's chains; this makes every operation refuse one that was not revoked
    /// (a restore, a row written by hand) as `chain_revoked`/`user_disabled` all the same.
    package var isUserDisabled: Bool
    /// The RFC 7638 thumbprint of the key the chain is bound to (DPoP, RFC 9449), or nil for a
    /// bearer chain. Set at login, never changed.
    package var jkt: String?
    /// The exchange attempt number (`X-Baton-Exchange-Attempt`) of the request that made this
    /// head, or nil: a login's head, or an exchange whose client sent no number (R3b).
    package var attempt: Int?

    /// - Parameter authTime: defaults to `createdAt` (a chain authenticates when it is created).
    package init(
        id: ChainID, userID: Int64, deviceID: String, deviceClass: DeviceClass, createdAt: Instant,
        generation: Int, hash: [UInt8], issuedAt: Instant, expiresAt: Instant, presented: Bool,
        revocation: RevocationReason?, authTime: Instant? = nil, confirmFailures: Int = 0, isUserDisabled: Bool = false,
        jkt: String? = nil, attempt: Int? = nil
    ) {
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.createdAt = createdAt
        self.generation = generation
        self.hash = hash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.presented = presented
        self.revocation = revocation
        self.authTime = authTime ?? createdAt
        self.confirmFailures = confirmFailures
        self.isUserDisabled = isUserDisabled
        self.jkt = jkt
        self.attempt = attempt
    }

    /// Whether the chain is bound to a key (DPoP).
    package var isBound: Bool { jkt != nil }

    /// When the chain reaches its absolute life.
    package func sessionEnd(_ policy: Policy) -> Instant { createdAt + policy.maxSession }

    /// When the head can no longer be exchanged.
    package func exchangeDeadline(_ policy: Policy) -> Instant { expiresAt + policy.exchangeWindow }

    /// Not revoked, not past its absolute life, and its head still exchangeable.
    package func isLive(at now: Instant, _ policy: Policy) -> Bool {
        revocation == nil && now < sessionEnd(policy) && now < exchangeDeadline(policy)
    }
}

/// How a consumed token was exchanged: the "original side" of a reuse report (R3).
package struct ExchangeRecord: Sendable, Equatable {
    package var at: Instant
    package var ip: String?
    package var userAgent: String?
    package var deviceID: String?
    /// When the consumed token was issued (its lineage row's `issued_at`): a bound chain's R3a
    /// allows the retry within that token's exchange window.
    package var tokenIssuedAt: Instant?

    package init(at: Instant, ip: String?, userAgent: String?, deviceID: String?, tokenIssuedAt: Instant? = nil) {
        self.at = at
        self.ip = ip
        self.userAgent = userAgent
        self.deviceID = deviceID
        self.tokenIssuedAt = tokenIssuedAt
    }
}

/// Where a presented (MAC-valid) token stands in its chain.
package enum Standing: Sendable, Equatable {
    /// The current head.
    case head
    /// An earlier generation, consumed by an exchange. The record is nil only when the
    /// lineage row is gone (pruned); the MAC still proves we issued it.
    case consumed(ExchangeRecord?)
    /// A head that an R3a retry revoked.
    case replacedSibling
    /// Nothing we issued matches (only possible with a leaked key): treated as invalid.
    case unknown
}

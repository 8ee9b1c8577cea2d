import BatonCore

/// What login and exchange hand back: the new token and its deadlines.
package struct TokenBundle: Sendable, Equatable {
    /// The token text; shown to the client once and never stored.
    package var token: String
    package var chainID: ChainID
    package var generation: Int
    /// When the token stops granting access.
    package var expiresAt: Instant
    /// The last moment it can be exchanged (exchange window and absolute life).
    package var exchangeUntil: Instant
    /// Seconds from issue to `expiresAt`.
    package var expiresIn: Int64
    /// Whether the chain is bound to a key: the bundle's `token_type` is then `DPoP`.
    package var isBound: Bool

    package init(token: String, chainID: ChainID, generation: Int, expiresAt: Instant, exchangeUntil: Instant, expiresIn: Int64,
                 isBound: Bool = false) {
        self.isBound = isBound
        self.token = token
        self.chainID = chainID
        self.generation = generation
        self.expiresAt = expiresAt
        self.exchangeUntil = exchangeUntil
        self.expiresIn = expiresIn
    }
}

/// A successful verify: who the token belongs to.
package struct Verification: Sendable, Equatable {
    package var userID: Int64
    package var username: String
    package var chainID: ChainID
    package var deviceID: String
    package var expiresAt: Instant
    /// The chain's last active authentication (RFC 9470 `auth_time`).
    package var authTime: Instant

    package init(userID: Int64, username: String, chainID: ChainID, deviceID: String, expiresAt: Instant, authTime: Instant) {
        self.userID = userID
        self.username = username
        self.chainID = chainID
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.authTime = authTime
    }
}

/// A successful self-service password change.
package struct PasswordChange: Sendable, Equatable {
    /// The presenting chain's new `auth_time` (the change itself authenticated).
    package var authTime: Instant
    /// The user's other chains it revoked (`password_changed`).
    package var revokedChains: [ChainID]

    package init(authTime: Instant, revokedChains: [ChainID]) {
        self.authTime = authTime
        self.revokedChains = revokedChains
    }
}

/// A login as the API receives it.
package struct LoginRequest: Sendable, Equatable {
    package var username: String
    package var password: String
    package var deviceID: String
    package var deviceClass: DeviceClass
    package var deviceName: String?
    /// The thumbprint of the key of the login's verified DPoP proof: the new chain is bound to
    /// it. nil: a bearer chain.
    package var proofKey: String?

    package init(username: String, password: String, deviceID: String, deviceClass: DeviceClass = .other, deviceName: String? = nil,
                 proofKey: String? = nil) {
        self.proofKey = proofKey
        self.username = username
        self.password = password
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.deviceName = deviceName
    }
}

extension TokenBundle {
    /// The bundle for a freshly issued head: its deadlines from the chain and the policy.
    package init(issued: IssuedToken, chain: ChainHead, expiresAt: Instant, now: Instant, policy: Policy) {
        self.init(
            token: issued.text, chainID: chain.id, generation: issued.generation, expiresAt: expiresAt,
            exchangeUntil: min(expiresAt + policy.exchangeWindow, chain.sessionEnd(policy)),
            expiresIn: (expiresAt - now).wholeSecondsRoundedUp, isBound: chain.isBound)
    }
}

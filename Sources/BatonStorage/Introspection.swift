import BatonCore

/// What RFC 7662 token introspection reports about an active token: the verify answer's
/// identity plus the head's issue time and the key a bound chain is tied to. Read without
/// changing anything (no R3a "presented" mark, no R4 revocation).
package struct Introspection: Sendable, Equatable {
    package var userID: Int64
    package var username: String
    package var chainID: ChainID
    package var deviceID: String
    /// When the head was issued (`iat`).
    package var issuedAt: Instant
    /// When the head stops granting access (`exp`).
    package var expiresAt: Instant
    /// The chain's last active authentication (RFC 9470 `auth_time`).
    package var authTime: Instant
    /// The RFC 7638 thumbprint of the chain's key (`cnf.jkt`, RFC 9449 §6.2); nil for a bearer chain.
    package var jkt: String?

    package init(userID: Int64, username: String, chainID: ChainID, deviceID: String, issuedAt: Instant, expiresAt: Instant,
                 authTime: Instant, jkt: String?) {
        self.userID = userID
        self.username = username
        self.chainID = chainID
        self.deviceID = deviceID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.authTime = authTime
        self.jkt = jkt
    }
}

import BatonCore

/// One of a user's live sessions (a chain), as "your devices" and `baton admin user show` list it.
package struct Session: Sendable, Equatable {
    package var chainID: ChainID
    package var deviceID: String
    package var deviceClass: DeviceClass
    package var deviceName: String?
    package var createdAt: Instant
    /// The last login, exchange or confirmation (verify is not recorded: it is the hot path).
    package var lastUsedAt: Instant
    /// The client address and User-Agent of that last use.
    package var lastAddress: String?
    package var lastUserAgent: String?
    /// Whether this is the session of the token that asked.
    package var isCurrent: Bool
    /// Whether the session is bound to a key (DPoP).
    package var isBound: Bool

    package init(chainID: ChainID, deviceID: String, deviceClass: DeviceClass, deviceName: String?, createdAt: Instant,
                 lastUsedAt: Instant, lastAddress: String?, lastUserAgent: String?, isCurrent: Bool, isBound: Bool = false) {
        self.isBound = isBound
        self.chainID = chainID
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.deviceName = deviceName
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.lastAddress = lastAddress
        self.lastUserAgent = lastUserAgent
        self.isCurrent = isCurrent
    }
}

/// What the session list reads of a chain besides its head: its device name and its last use.
package struct SessionActivity: Sendable, Equatable {
    package var deviceName: String?
    /// The chain's last login, exchange or confirmation (`chains.last_used_at`), if it has one.
    package var lastUsedAt: Instant?
    package var lastAddress: String?
    package var lastUserAgent: String?

    package init(deviceName: String?, lastUsedAt: Instant?, lastAddress: String?, lastUserAgent: String?) {
        self.deviceName = deviceName
        self.lastUsedAt = lastUsedAt
        self.lastAddress = lastAddress
        self.lastUserAgent = lastUserAgent
    }

    /// The audit kinds that count as a use of a session.
    package static let useKinds: [AuditKind] = [.loginSucceeded, .exchanged, .exchangeRetried, .stepUpSucceeded]
    /// `useKinds` as SQL string literals.
    package static var useKindsSQL: String { useKinds.map { "'\($0.rawValue)'" }.joined(separator: ", ") }

    /// Sets each chain's last use from its newest audit event of `useKinds` (what the session
    /// list read before schema version 9), once, in the migration to version 9: an upgraded
    /// database shows the same "last used" as before. One statement for both stores (SQLite
    /// 3.33's and PostgreSQL's `UPDATE ... FROM`).
    package static var lastUseFromAuditSQL: String {
        """
        UPDATE chains SET last_used_at = a.at, last_used_ip = a.ip, last_used_user_agent = a.user_agent
        FROM (SELECT chain_id, max(id) AS id FROM audit WHERE chain_id IS NOT NULL AND kind IN (\(useKindsSQL)) GROUP BY chain_id) AS newest
        JOIN audit a ON a.id = newest.id
        WHERE chains.id = newest.chain_id
        """
    }
}

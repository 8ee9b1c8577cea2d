import BatonCore
import BatonStorage

/// A chain's row with its user's name: what every token operation reads first.
package struct ChainRecord: Sendable {
    package var head: ChainHead
    package var username: String

    package init(head: ChainHead, username: String) {
        self.head = head
        self.username = username
    }
}

/// A token that left head state, as its lineage row records it: SHA-256 of the token, and how
/// it left (exchanged, with the request that did it, or replaced by an R3a retry).
package typealias LineageRow = (hash: [UInt8], end: LineageEnd)

/// An account as the operations need it.
package struct UserRecord: Sendable {
    package var id: Int64
    /// The name as stored.
    package var username: String
    /// The encoded argon2id hash.
    package var passwordHash: String
    package var isDisabled: Bool

    package init(id: Int64, username: String, passwordHash: String, isDisabled: Bool) {
        self.id = id
        self.username = username
        self.passwordHash = passwordHash
        self.isDisabled = isDisabled
    }
}

/// A chain about to be created by a login, with its generation-0 head.
package struct NewChain: Sendable {
    package var id: ChainID
    package var userID: Int64
    package var deviceID: String
    package var deviceClass: DeviceClass
    package var deviceName: String?
    /// The login's moment: creation, the head's issue and `auth_time` (R1: the login authenticates).
    package var createdAt: Instant
    /// SHA-256 of the generation-0 token.
    package var headHash: [UInt8]
    package var headExpiresAt: Instant
    /// The thumbprint of the key the chain is bound to (DPoP), or nil.
    package var jkt: String?
    /// The token key the generation-0 token was made with (`chains.head_key`).
    package var keyID: UInt32 = 0
}

/// A new head for an existing chain (R2's successor, or R3a's replacement).
package struct HeadUpdate: Sendable {
    package var generation: Int
    /// SHA-256 of the token.
    package var hash: [UInt8]
    package var expiresAt: Instant
    /// The token key the head was made with (`chains.head_key`).
    package var keyID: UInt32 = 0
    /// The exchange attempt that made the head (`chains.head_attempt`), nil when unnumbered.
    package var attempt: Int? = nil
    /// The exchange is the chain's use: the same UPDATE sets `last_used_at` (the head's issue
    /// time), `last_used_ip` and `last_used_user_agent`, so the audit event's `record` need
    /// not update the row a second time (one statement, one row version and one trigger
    /// firing less per exchange on PostgreSQL).
    package var usedFrom: RequestContext = RequestContext()
}

/// When a chain counts as ended long enough ago to prune: revoked, or past its natural end
/// (absolute life, or exchange window after its head's expiry), before `cutoff`.
package struct PruneBounds: Sendable {
    /// Now minus the retention.
    package var cutoff: Instant
    package var maxSession: Duration
    package var exchangeWindow: Duration
}

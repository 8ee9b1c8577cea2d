import BatonCore

/// An account as the admin CLI lists it.
package struct UserSummary: Sendable, Equatable {
    package var id: Int64
    package var username: String
    package var createdAt: Instant
    package var isDisabled: Bool
    package var liveChains: Int

    package init(id: Int64, username: String, createdAt: Instant, isDisabled: Bool, liveChains: Int) {
        self.id = id
        self.username = username
        self.createdAt = createdAt
        self.isDisabled = isDisabled
        self.liveChains = liveChains
    }
}

/// What an account change did: the stored name, whether anything changed, the chains revoked.
package struct AccountChange: Sendable, Equatable {
    /// The name as stored (`Alice` given, `alice` stored: names are case-insensitive).
    package var username: String
    /// false when the account was already in the asked state (no event written).
    package var changed: Bool
    package var revoked: [ChainID]

    package init(username: String, changed: Bool, revoked: [ChainID]) {
        self.username = username
        self.changed = changed
        self.revoked = revoked
    }
}

/// A chain as `baton admin chains` shows it.
package struct ChainSummary: Sendable, Equatable {
    package var head: ChainHead
    package var username: String
    package var lastExchangeAt: Instant?
    package var revokedAt: Instant?

    package init(head: ChainHead, username: String, lastExchangeAt: Instant?, revokedAt: Instant?) {
        self.head = head
        self.username = username
        self.lastExchangeAt = lastExchangeAt
        self.revokedAt = revokedAt
    }

    /// `live`, `revoked (reason)`, or `expired (session|exchange window)`.
    package func state(at now: Instant, _ policy: Policy) -> String {
        if let reason = head.revocation { return "revoked (\(reason.rawValue))" }
        if now >= head.sessionEnd(policy) { return "expired (session)" }
        if now >= head.exchangeDeadline(policy) { return "expired (exchange window)" }
        return "live"
    }
}

/// What `baton admin stats` prints.
package struct StoreStatistics: Sendable, Equatable {
    package var users: Int
    package var liveChains: Int
    package var exchangesLastHour: Int
    package var exchangesLastDay: Int
    package var reusesLastHour: Int
    package var reusesLastDay: Int
    /// The database's size on disk in bytes, as the store measures it.
    package var databaseBytes: Int64
    /// What `databaseBytes` covers, for the label: `with WAL` (the SQLite file and its WAL),
    /// `PostgreSQL` (`pg_database_size`: the whole database, tables and indexes).
    package var databaseBytesCover: String

    package init(users: Int, liveChains: Int, exchangesLastHour: Int, exchangesLastDay: Int, reusesLastHour: Int, reusesLastDay: Int,
                 databaseBytes: Int64, databaseBytesCover: String) {
        self.users = users
        self.liveChains = liveChains
        self.exchangesLastHour = exchangesLastHour
        self.exchangesLastDay = exchangesLastDay
        self.reusesLastHour = reusesLastHour
        self.reusesLastDay = reusesLastDay
        self.databaseBytes = databaseBytes
        self.databaseBytesCover = databaseBytesCover
    }
}

/// What a prune removed (or, for a dry run, would remove), and what it kept as evidence.
package struct PruneResult: Sendable, Equatable {
    package var chains = 0
    package var lineageRows = 0
    package var auditEvents = 0
    /// Ended chains past the retention kept because they have a security event.
    package var keptChains = 0
    package init() {}

    /// Adds what one batch removed.
    package mutating func add(_ batch: PruneResult) {
        chains += batch.chains
        lineageRows += batch.lineageRows
        auditEvents += batch.auditEvents
        keptChains += batch.keptChains
    }
}

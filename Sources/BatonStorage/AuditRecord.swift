import BatonCore

/// One audit event as read back.
package struct AuditRecord: Sendable, Equatable {
    package var id: Int64
    package var at: Instant
    package var kind: String
    package var username: String?
    package var chainID: ChainID?
    package var generation: Int?
    package var ip: String?
    package var userAgent: String?
    package var deviceID: String?
    /// The detail object's JSON text.
    package var detail: String

    package init(
        id: Int64, at: Instant, kind: String, username: String?, chainID: ChainID?, generation: Int?,
        ip: String?, userAgent: String?, deviceID: String?, detail: String
    ) {
        self.id = id
        self.at = at
        self.kind = kind
        self.username = username
        self.chainID = chainID
        self.generation = generation
        self.ip = ip
        self.userAgent = userAgent
        self.deviceID = deviceID
        self.detail = detail
    }
}

/// Which audit events to read.
package struct AuditFilter: Sendable, Equatable {
    /// Case-insensitive, as usernames are.
    package var username: String?
    package var chainID: ChainID?
    package var kind: AuditKind?
    package var since: Instant?
    package var until: Instant?
    /// Only events after this id (for following).
    package var afterID: Int64?
    /// The newest `limit` events (returned oldest first).
    package var limit: Int?
    package init() {}
}

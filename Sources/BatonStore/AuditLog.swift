import BatonCore

/// One audit event as written: who, what, where, and a detail object.
package struct AuditEvent: Sendable, Equatable {
    package var kind: AuditKind
    package var userID: Int64?
    package var username: String?
    package var chainID: ChainID?
    package var generation: Int?
    package var context: RequestContext
    package var detail: [String: JSONValue]

    package init(
        kind: AuditKind, userID: Int64? = nil, username: String? = nil, chainID: ChainID? = nil,
        generation: Int? = nil, context: RequestContext = RequestContext(), detail: [String: JSONValue] = [:]
    ) {
        self.kind = kind
        self.userID = userID
        self.username = username
        self.chainID = chainID
        self.generation = generation
        self.context = context
        self.detail = detail
    }
}

/// Appends audit events inside the caller's transaction, so an event commits or rolls back
/// with the state change it describes.
enum AuditLog {
    static func append(_ event: AuditEvent, at now: Instant, on connection: Connection) throws(SQLiteError) {
        try connection.statement("""
            INSERT INTO audit (at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute([
                .int(now.milliseconds), .text(event.kind.rawValue), .optional(event.userID), .optional(event.username),
                .optional(event.chainID?.rawValue), .optional(event.generation.map(Int64.init)),
                .optional(event.context.ip), .optional(event.context.userAgent), .optional(event.context.deviceID),
                .text(JSONValue.object(event.detail).text),
            ])
        connection.uncommittedEvents.append(event)
    }
}

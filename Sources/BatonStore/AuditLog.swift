import BatonCore
import BatonStorage

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

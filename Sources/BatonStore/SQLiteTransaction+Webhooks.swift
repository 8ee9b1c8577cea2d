import BatonCore
import BatonOperations
import BatonStorage

/// The outbox's rows on SQLite. The single writer commits outbox rows in id order, so an
/// endpoint's cursor never passes an event that commits later.
extension SQLiteTransaction {
    package func recordProof(_ digest: [UInt8], keepUntil: Instant, now: Instant) throws(SQLiteError) -> Bool {
        try connection.statement("""
            DELETE FROM proof_replays WHERE digest IN (SELECT digest FROM proof_replays WHERE keep_until < ? LIMIT 4)
            """).execute([.int(now.milliseconds)])
        try connection.statement("""
            INSERT INTO proof_replays (digest, keep_until) VALUES (?, ?)
            ON CONFLICT (digest) DO UPDATE SET keep_until = excluded.keep_until WHERE proof_replays.keep_until < ?
            """).execute([.blob(digest), .int(keepUntil.milliseconds), .int(now.milliseconds)])
        return connection.changes == 1
    }

    package func recordDevice(_ deviceID: String, ofUser userID: Int64, now: Instant) throws(SQLiteError) -> Bool {
        try connection.statement("INSERT OR IGNORE INTO known_devices (user_id, device_id, first_seen) VALUES (?, ?, ?)")
            .execute([.int(userID), .text(deviceID), .int(now.milliseconds)])
        return connection.changes == 1
    }

    package func enqueue(_ event: OutboxEvent) throws(SQLiteError) {
        try connection.statement("INSERT INTO webhook_outbox (message_id, type, at, body) VALUES (?, ?, ?, ?)")
            .execute([.text(event.messageID), .text(event.type.rawValue), .int(event.at.milliseconds), .text(event.body)])
    }

    package func nextOutboxEntry(after cursor: Int64, types: [String]) throws(SQLiteError) -> OutboxEntry? {
        // `types` is a comma list matched with instr: one cached statement whatever the filter.
        try connection.statement("""
            SELECT id, message_id, type, at, body FROM webhook_outbox
            WHERE id > ? AND instr(',' || ? || ',', ',' || type || ',') > 0 ORDER BY id LIMIT 1
            """).first([.int(cursor), .text(types.joined(separator: ","))]) { row in
                OutboxEntry(id: row.int(0), event: OutboxEvent(
                    messageID: row.text(1), type: WebhookEventType(rawValue: row.text(2)) ?? .chainRevoked,
                    at: Instant(milliseconds: row.int(3)), body: row.text(4)))
            }
    }

    package func lastOutboxID(before instant: Instant?) throws(SQLiteError) -> Int64 {
        try connection.statement("SELECT coalesce(max(id), 0) FROM webhook_outbox WHERE ?1 IS NULL OR at < ?1")
            .first([.optional(instant?.milliseconds)]) { $0.int(0) } ?? 0
    }

    private static let endpointColumns = """
        url, cursor, event_types, attempts, next_attempt_at, first_failed_at, last_error, last_error_at,
        delivered, failed, lease_id, lease_until
        """

    private static func endpointState(_ row: Row) -> EndpointState {
        var state = EndpointState(url: row.text(0), cursor: row.int(1))
        state.eventTypes = row.text(2).split(separator: ",").map(String.init)
        state.attempts = Int(row.int(3))
        state.nextAttemptAt = row.optionalInt(4).map(Instant.init(milliseconds:))
        state.firstFailedAt = row.optionalInt(5).map(Instant.init(milliseconds:))
        state.lastError = row.optionalText(6)
        state.lastErrorAt = row.optionalInt(7).map(Instant.init(milliseconds:))
        state.delivered = row.int(8)
        state.failed = row.int(9)
        state.leaseID = row.optionalText(10)
        state.leaseUntil = row.optionalInt(11).map(Instant.init(milliseconds:))
        return state
    }

    private static func values(_ state: EndpointState) -> [SQLValue] {
        [.text(state.url), .int(state.cursor), .text(state.eventTypes.joined(separator: ",")), .int(Int64(state.attempts)),
         .optional(state.nextAttemptAt?.milliseconds), .optional(state.firstFailedAt?.milliseconds), .optional(state.lastError),
         .optional(state.lastErrorAt?.milliseconds), .int(state.delivered), .int(state.failed), .optional(state.leaseID),
         .optional(state.leaseUntil?.milliseconds)]
    }

    /// No lock (the single writer serializes the claims), so never skipped.
    package func endpointState(_ url: String, lock: EndpointLock) throws(SQLiteError) -> EndpointState? {
        try connection.statement("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE url = ?").first([.text(url)], Self.endpointState)
    }

    package func insertEndpoint(_ state: EndpointState) throws(SQLiteError) {
        try connection.statement("INSERT OR IGNORE INTO webhook_endpoints (\(Self.endpointColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .execute(Self.values(state))
    }

    package func saveEndpoint(_ state: EndpointState) throws(SQLiteError) {
        try connection.statement("INSERT OR REPLACE INTO webhook_endpoints (\(Self.endpointColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .execute(Self.values(state))
    }

    package func endpointStatuses() throws(SQLiteError) -> [WebhookEndpointStatus] {
        try connection.statement("""
            SELECT \(Self.endpointColumns),
                   (SELECT count(*) FROM webhook_outbox o WHERE o.id > e.cursor
                      AND instr(',' || e.event_types || ',', ',' || o.type || ',') > 0),
                   (SELECT min(o.at) FROM webhook_outbox o WHERE o.id > e.cursor
                      AND instr(',' || e.event_types || ',', ',' || o.type || ',') > 0)
            FROM webhook_endpoints e ORDER BY url
            """).all { row in
                WebhookEndpointStatus(state: Self.endpointState(row), pending: row.int(12),
                                      oldestPendingAt: row.optionalInt(13).map(Instant.init(milliseconds:)))
            }
    }

    package func pruneOutbox(before cutoff: Instant, limit: Int?) throws(SQLiteError) -> Int {
        let done = """
            FROM webhook_outbox o WHERE o.at < ?1 AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE o.id > e.cursor
              AND instr(',' || e.event_types || ',', ',' || o.type || ',') > 0)
            """
        guard let limit else {
            return Int(try connection.statement("SELECT count(*) " + done).first([.int(cutoff.milliseconds)]) { $0.int(0) } ?? 0)
        }
        try connection.statement("DELETE FROM webhook_outbox WHERE id IN (SELECT o.id \(done) ORDER BY o.id LIMIT ?2)")
            .execute([.int(cutoff.milliseconds), .int(Int64(limit))])
        return connection.changes
    }

    package func deleteEndpoint(_ url: String) throws(SQLiteError) -> Bool {
        try connection.statement("DELETE FROM webhook_endpoints WHERE url = ?").execute([.text(url)])
        return connection.changes == 1
    }
}

import BatonCore
import BatonOperations
import BatonStorage

/// The outbox's rows on SQLite: each event with one pending delivery per endpoint that takes
/// it (`webhook_deliveries`), claimed through that table's index, never by scanning the outbox.
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
        // One pending delivery per endpoint that takes the type (a handful of rows to read).
        try connection.statement("""
            INSERT INTO webhook_deliveries (endpoint, event_id, alert, due_at)
            SELECT url, ?, ?, 0 FROM webhook_endpoints WHERE instr(',' || event_types || ',', ',' || ? || ',') > 0
            """).execute([.int(connection.lastInsertRowID), .int(event.type.isAlert ? 1 : 0), .text(event.type.rawValue)])
    }

    private static let endpointColumns = "url, event_types, last_error, last_error_at, delivered, failed"

    private static func endpointState(_ row: Row) -> EndpointState {
        var state = EndpointState(url: row.text(0))
        state.eventTypes = row.text(1).split(separator: ",").map(String.init)
        state.lastError = row.optionalText(2)
        state.lastErrorAt = row.optionalInt(3).map(Instant.init(milliseconds:))
        state.delivered = row.int(4)
        state.failed = row.int(5)
        return state
    }

    package func endpointState(_ url: String) throws(SQLiteError) -> EndpointState? {
        try connection.statement("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE url = ?").first([.text(url)], Self.endpointState)
    }

    package func insertEndpoint(_ state: EndpointState) throws(SQLiteError) {
        // `cursor` is version 5's in-order position, unused since version 7.
        try connection.statement("INSERT OR IGNORE INTO webhook_endpoints (url, cursor, event_types) VALUES (?, 0, ?)")
            .execute([.text(state.url), .text(state.eventTypes.joined(separator: ","))])
    }

    package func saveEndpointTypes(_ url: String, _ types: [String]) throws(SQLiteError) {
        try connection.statement("UPDATE webhook_endpoints SET event_types = ? WHERE url = ?").execute([.text(types.joined(separator: ",")), .text(url)])
    }

    package func recordAttempt(_ url: String, delivered: Int64, failed: Int64, error: String?, at now: Instant) throws(SQLiteError) {
        try connection.statement("""
            UPDATE webhook_endpoints SET delivered = delivered + ?1, failed = failed + ?2,
                last_error = coalesce(?3, last_error), last_error_at = CASE WHEN ?3 IS NULL THEN last_error_at ELSE ?4 END
            WHERE url = ?5
            """).execute([.int(delivered), .int(failed), .optional(error), .int(now.milliseconds), .text(url)])
    }

    package func nextDue(_ url: String, alert: Bool) throws(SQLiteError) -> Instant? {
        // The index's first entry for (endpoint, alert): a seek, whatever the backlog.
        try connection.statement("SELECT min(due_at) FROM webhook_deliveries WHERE endpoint = ? AND alert = ?")
            .first([.text(url), .int(alert ? 1 : 0)]) { $0.optionalInt(0).map(Instant.init(milliseconds:)) } ?? nil
    }

    private static let pendingColumns = """
        d.endpoint, d.event_id, d.due_at, d.attempts, d.first_failed_at, d.lease_id, o.message_id, o.type, o.at, o.body
        """

    private static func pending(_ row: Row) -> PendingDelivery {
        let entry = OutboxEntry(id: row.int(1), event: OutboxEvent(
            messageID: row.text(6), type: WebhookEventType(rawValue: row.text(7)) ?? .chainRevoked,
            at: Instant(milliseconds: row.int(8)), body: row.text(9)))
        var pending = PendingDelivery(endpoint: row.text(0), entry: entry, dueAt: Instant(milliseconds: row.int(2)))
        pending.attempts = Int(row.int(3))
        pending.firstFailedAt = row.optionalInt(4).map(Instant.init(milliseconds:))
        pending.leaseID = row.optionalText(5)
        return pending
    }

    /// The single writer serializes claims, so the row read is the row leased.
    package func claimDue(_ url: String, alert: Bool, now: Instant, leaseID: String, leaseUntil: Instant) throws(SQLiteError) -> PendingDelivery? {
        guard var pending = try connection.statement("""
            SELECT \(Self.pendingColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.event_id
            WHERE d.endpoint = ? AND d.alert = ? AND d.due_at <= ? ORDER BY d.due_at, d.event_id LIMIT 1
            """).first([.text(url), .int(alert ? 1 : 0), .int(now.milliseconds)], Self.pending) else { return nil }
        // Leased: due again only when the lease runs out (an instance that died mid-attempt).
        pending.dueAt = leaseUntil
        pending.leaseID = leaseID
        try saveDelivery(pending)
        return pending
    }

    package func pendingDelivery(_ url: String, eventID: Int64) throws(SQLiteError) -> PendingDelivery? {
        try connection.statement("""
            SELECT \(Self.pendingColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.event_id
            WHERE d.endpoint = ? AND d.event_id = ?
            """).first([.text(url), .int(eventID)], Self.pending)
    }

    package func saveDelivery(_ pending: PendingDelivery) throws(SQLiteError) {
        try connection.statement("""
            UPDATE webhook_deliveries SET due_at = ?, attempts = ?, first_failed_at = ?, lease_id = ? WHERE event_id = ? AND endpoint = ?
            """).execute([.int(pending.dueAt.milliseconds), .int(Int64(pending.attempts)), .optional(pending.firstFailedAt?.milliseconds),
                          .optional(pending.leaseID), .int(pending.entry.id), .text(pending.endpoint)])
    }

    package func deleteDelivery(_ url: String, eventID: Int64) throws(SQLiteError) {
        try connection.statement("DELETE FROM webhook_deliveries WHERE event_id = ? AND endpoint = ?").execute([.int(eventID), .text(url)])
    }

    package func queueAgain(since instant: Instant, url: String?) throws(SQLiteError) -> Int {
        let matched = try connection.statement("SELECT count(*) FROM webhook_endpoints WHERE ?1 IS NULL OR url = ?1")
            .first([.optional(url)]) { Int($0.int(0)) } ?? 0
        try connection.statement("""
            INSERT OR IGNORE INTO webhook_deliveries (endpoint, event_id, alert, due_at)
            SELECT e.url, o.id, o.type IN (\(WebhookEventType.alertTypesSQL)), 0 FROM webhook_outbox o JOIN webhook_endpoints e
              ON instr(',' || e.event_types || ',', ',' || o.type || ',') > 0
            WHERE o.at >= ?1 AND (?2 IS NULL OR e.url = ?2)
            """).execute([.int(instant.milliseconds), .optional(url)])
        return matched
    }

    package func endpointStatuses() throws(SQLiteError) -> [WebhookEndpointStatus] {
        try connection.statement("""
            SELECT \(Self.endpointColumns),
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = e.url),
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = e.url AND d.attempts > 0),
                   (SELECT min(d.due_at) FROM webhook_deliveries d WHERE d.endpoint = e.url AND d.attempts > 0 AND d.lease_id IS NULL),
                   (SELECT o.at FROM webhook_outbox o
                     WHERE o.id = (SELECT min(d.event_id) FROM webhook_deliveries d WHERE d.endpoint = e.url))
            FROM webhook_endpoints e ORDER BY url
            """).all { row in
                var status = WebhookEndpointStatus(state: Self.endpointState(row), pending: row.int(6),
                                                   oldestPendingAt: row.optionalInt(9).map(Instant.init(milliseconds:)))
                status.retrying = row.int(7)
                status.nextRetryAt = row.optionalInt(8).map(Instant.init(milliseconds:))
                return status
            }
    }

    package func pruneOutbox(before cutoff: Instant, limit: Int?) throws(SQLiteError) -> Int {
        // An event is done for every endpoint once no delivery of it is pending (primary key
        // (event_id, endpoint): one seek per event).
        let done = """
            FROM webhook_outbox o WHERE o.at < ?1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = o.id)
            """
        guard let limit else {
            return Int(try connection.statement("SELECT count(*) " + done).first([.int(cutoff.milliseconds)]) { $0.int(0) } ?? 0)
        }
        try connection.statement("DELETE FROM webhook_outbox WHERE id IN (SELECT o.id \(done) ORDER BY o.id LIMIT ?2)")
            .execute([.int(cutoff.milliseconds), .int(Int64(limit))])
        return connection.changes
    }

    package func deleteEndpoint(_ url: String) throws(SQLiteError) -> Bool {
        try connection.statement("DELETE FROM webhook_deliveries WHERE endpoint = ?").execute([.text(url)])
        try connection.statement("DELETE FROM webhook_endpoints WHERE url = ?").execute([.text(url)])
        return connection.changes == 1
    }
}

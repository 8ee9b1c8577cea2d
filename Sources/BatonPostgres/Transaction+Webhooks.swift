import BatonCore
import BatonOperations
import BatonStorage

/// The outbox's rows on PostgreSQL: each event with one pending delivery per endpoint that
/// takes it (`webhook_deliveries`), claimed through that table's index. Nothing depends on
/// outbox ids being in commit order (each pending event is claimed on its own, not by a
/// cursor), so outbox writers no longer serialize on an advisory lock; `enqueue` keeps the
/// events and `writeOutbox` inserts them just before COMMIT.
extension Transaction {
    package func recordProof(_ digest: [UInt8], keepUntil: Instant, now: Instant) throws(PostgresError) -> Bool {
        // Another instance deleting the same expired rows is skipped, never waited for.
        try query("""
            DELETE FROM proof_replays WHERE digest IN
              (SELECT digest FROM proof_replays WHERE keep_until < $1 LIMIT 4 FOR UPDATE SKIP LOCKED)
            """, [String(now.milliseconds)])
        // A concurrent insert of the same digest waits for the first to commit, then conflicts.
        return try !query("""
            INSERT INTO proof_replays (digest, keep_until) VALUES ($1, $2)
            ON CONFLICT (digest) DO UPDATE SET keep_until = EXCLUDED.keep_until WHERE proof_replays.keep_until < $3
            RETURNING 1
            """, [ByteaText.encode(digest), String(keepUntil.milliseconds), String(now.milliseconds)]).isEmpty
    }

    package func recordDevice(_ deviceID: String, ofUser userID: Int64, now: Instant) throws(PostgresError) -> Bool {
        try !query("""
            INSERT INTO known_devices (user_id, device_id, first_seen) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING RETURNING 1
            """, [String(userID), deviceID, String(now.milliseconds)]).isEmpty
    }

    package func enqueue(_ event: OutboxEvent) throws(PostgresError) {
        outbox.append(event)
    }

    /// Inserts the events `enqueue` kept, each with a pending delivery per endpoint that takes
    /// its type; the caller commits next.
    func writeOutbox() throws(PostgresError) {
        for event in outbox {
            try query("""
                WITH event AS (INSERT INTO webhook_outbox (message_id, type, at, body) VALUES ($1, $2, $3, $4) RETURNING id)
                INSERT INTO webhook_deliveries (endpoint, event_id, alert, due_at)
                SELECT e.url, event.id, $5, 0 FROM event, webhook_endpoints e WHERE $2 = ANY(string_to_array(e.event_types, ','))
                """, [event.messageID, event.type.rawValue, String(event.at.milliseconds), event.body, event.type.isAlert ? "true" : "false"])
        }
    }

    private static let endpointColumns = "url, event_types, last_error, last_error_at, delivered, failed"

    private static func endpointState(_ row: [String?]) -> EndpointState {
        var state = EndpointState(url: row.text(0))
        state.eventTypes = row.text(1).split(separator: ",").map(String.init)
        state.lastError = row[2]
        state.lastErrorAt = row.optionalInstant(3)
        state.delivered = row.int(4)
        state.failed = row.int(5)
        return state
    }

    package func endpointState(_ url: String) throws(PostgresError) -> EndpointState? {
        try query("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE url = $1", [url]).first.map(Self.endpointState)
    }

    package func insertEndpoint(_ state: EndpointState) throws(PostgresError) {
        // `cursor` is version 5's in-order position, unused since version 7.
        try query("INSERT INTO webhook_endpoints (url, cursor, event_types) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING",
                  [state.url, state.eventTypes.joined(separator: ",")])
    }

    package func saveEndpointTypes(_ url: String, _ types: [String]) throws(PostgresError) {
        try query("UPDATE webhook_endpoints SET event_types = $2 WHERE url = $1", [url, types.joined(separator: ",")])
    }

    package func recordAttempt(_ url: String, delivered: Int64, failed: Int64, error: String?, at now: Instant) throws(PostgresError) {
        try query("""
            UPDATE webhook_endpoints SET delivered = delivered + $2::bigint, failed = failed + $3::bigint,
                last_error = coalesce($4, last_error), last_error_at = CASE WHEN $4::text IS NULL THEN last_error_at ELSE $5::bigint END
            WHERE url = $1
            """, [url, String(delivered), String(failed), error, String(now.milliseconds)])
    }

    package func nextDue(_ url: String, alert: Bool) throws(PostgresError) -> Instant? {
        try query("SELECT min(due_at) FROM webhook_deliveries WHERE endpoint = $1 AND alert = $2", [url, alert ? "true" : "false"])
            .first?.optionalInstant(0)
    }

    private static let pendingColumns = """
        d.endpoint, d.event_id, d.due_at, d.attempts, d.first_failed_at, d.lease_id, o.message_id, o.type, o.at, o.body
        """

    private static func pending(_ row: [String?]) -> PendingDelivery {
        let entry = OutboxEntry(id: row.int(1), event: OutboxEvent(
            messageID: row.text(6), type: WebhookEventType(rawValue: row.text(7)) ?? .chainRevoked,
            at: Instant(milliseconds: row.int(8)), body: row.text(9)))
        var pending = PendingDelivery(endpoint: row.text(0), entry: entry, dueAt: Instant(milliseconds: row.int(2)))
        pending.attempts = Int(row.int(3))
        pending.firstFailedAt = row.optionalInstant(4)
        pending.leaseID = row[5]
        return pending
    }

    /// `FOR UPDATE SKIP LOCKED`: instances claiming at once take different events, and none
    /// waits for another's claim.
    package func claimDue(_ url: String, alert: Bool, now: Instant, leaseID: String, leaseUntil: Instant) throws(PostgresError) -> PendingDelivery? {
        try query("""
            UPDATE webhook_deliveries d SET due_at = $4, lease_id = $5
            FROM (SELECT event_id FROM webhook_deliveries WHERE endpoint = $1 AND alert = $2 AND due_at <= $3
                  ORDER BY due_at, event_id LIMIT 1 FOR UPDATE SKIP LOCKED) due, webhook_outbox o
            WHERE d.endpoint = $1 AND d.event_id = due.event_id AND o.id = d.event_id
            RETURNING \(Self.pendingColumns)
            """, [url, alert ? "true" : "false", String(now.milliseconds), String(leaseUntil.milliseconds), leaseID]).first.map(Self.pending)
    }

    /// `FOR UPDATE`: an attempt's outcome waits for another instance's claim of the row rather
    /// than being dropped (the event would go out again when its lease ran out).
    package func pendingDelivery(_ url: String, eventID: Int64) throws(PostgresError) -> PendingDelivery? {
        try query("""
            SELECT \(Self.pendingColumns) FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.event_id
            WHERE d.endpoint = $1 AND d.event_id = $2 FOR UPDATE OF d
            """, [url, String(eventID)]).first.map(Self.pending)
    }

    package func saveDelivery(_ pending: PendingDelivery) throws(PostgresError) {
        try query("""
            UPDATE webhook_deliveries SET due_at = $3, attempts = $4, first_failed_at = $5, lease_id = $6 WHERE event_id = $1 AND endpoint = $2
            """, [String(pending.entry.id), pending.endpoint, String(pending.dueAt.milliseconds), String(pending.attempts),
                  pending.firstFailedAt.map { String($0.milliseconds) }, pending.leaseID])
    }

    package func deleteDelivery(_ url: String, eventID: Int64) throws(PostgresError) {
        try query("DELETE FROM webhook_deliveries WHERE event_id = $1 AND endpoint = $2", [String(eventID), url])
    }

    package func queueAgain(since instant: Instant, url: String?) throws(PostgresError) -> Int {
        let matched = Int(try query("SELECT count(*) FROM webhook_endpoints WHERE $1::text IS NULL OR url = $1", [url]).first?.int(0) ?? 0)
        try query("""
            INSERT INTO webhook_deliveries (endpoint, event_id, alert, due_at)
            SELECT e.url, o.id, o.type IN (\(WebhookEventType.alertTypesSQL)), 0
            FROM webhook_outbox o JOIN webhook_endpoints e ON o.type = ANY(string_to_array(e.event_types, ','))
            WHERE o.at >= $1::bigint AND ($2::text IS NULL OR e.url = $2)
            ON CONFLICT DO NOTHING
            """, [String(instant.milliseconds), url])
        return matched
    }

    package func endpointStatuses() throws(PostgresError) -> [WebhookEndpointStatus] {
        try query("""
            SELECT \(Self.endpointColumns),
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = e.url),
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = e.url AND d.attempts > 0),
                   (SELECT min(d.due_at) FROM webhook_deliveries d WHERE d.endpoint = e.url AND d.attempts > 0 AND d.lease_id IS NULL),
                   (SELECT o.at FROM webhook_outbox o
                     WHERE o.id = (SELECT min(d.event_id) FROM webhook_deliveries d WHERE d.endpoint = e.url))
            FROM webhook_endpoints e ORDER BY url
            """).map { row in
                var status = WebhookEndpointStatus(state: Self.endpointState(row), pending: row.int(6), oldestPendingAt: row.optionalInstant(9))
                status.retrying = row.int(7)
                status.nextRetryAt = row.optionalInstant(8)
                return status
            }
    }

    package func pruneOutbox(before cutoff: Instant, limit: Int?) throws(PostgresError) -> Int {
        let done = """
            FROM webhook_outbox o WHERE o.at < $1::bigint AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = o.id)
            """
        guard let limit else { return Int(try query("SELECT count(*) " + done, [String(cutoff.milliseconds)]).first?.int(0) ?? 0) }
        return try query("DELETE FROM webhook_outbox WHERE id IN (SELECT o.id \(done) ORDER BY o.id LIMIT $2) RETURNING 1",
                         [String(cutoff.milliseconds), String(limit)]).count
    }

    package func deleteEndpoint(_ url: String) throws(PostgresError) -> Bool {
        try query("DELETE FROM webhook_deliveries WHERE endpoint = $1", [url])
        return try !query("DELETE FROM webhook_endpoints WHERE url = $1 RETURNING 1", [url]).isEmpty
    }
}

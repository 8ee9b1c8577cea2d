import BatonCore
import BatonOperations
import BatonStorage

/// The outbox's rows on PostgreSQL. Identity values are drawn at INSERT, not at COMMIT, so two
/// transactions could commit their outbox rows out of id order and a cursor pass one that is
/// still uncommitted. Hence `enqueue` only keeps the event, and `writeOutbox` inserts them just
/// before COMMIT under a transaction-scoped advisory lock: outbox writers then commit one at a
/// time, in id order. It is the last lock such a transaction takes (all its row locks are held
/// already), so it cannot close a cycle with them.
extension Transaction {
    /// Any number that names the outbox among the database's advisory locks ("outbx").
    static let outboxLockKey: Int64 = 0x6F75_7462_78

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

    /// Inserts the events `enqueue` kept, under the outbox lock (see above); the caller commits next.
    func writeOutbox() throws(PostgresError) {
        guard !outbox.isEmpty else { return }
        try query("SELECT pg_advisory_xact_lock($1)", [String(Self.outboxLockKey)])
        for event in outbox {
            try query("INSERT INTO webhook_outbox (message_id, type, at, body) VALUES ($1, $2, $3, $4)",
                      [event.messageID, event.type.rawValue, String(event.at.milliseconds), event.body])
        }
    }

    package func nextOutboxEntry(after cursor: Int64, types: [String]) throws(PostgresError) -> OutboxEntry? {
        try query("""
            SELECT id, message_id, type, at, body FROM webhook_outbox
            WHERE id > $1 AND type = ANY(string_to_array($2, ',')) ORDER BY id LIMIT 1
            """, [String(cursor), types.joined(separator: ",")]).first.map { row in
                OutboxEntry(id: row.int(0), event: OutboxEvent(
                    messageID: row.text(1), type: WebhookEventType(rawValue: row.text(2)) ?? .chainRevoked,
                    at: Instant(milliseconds: row.int(3)), body: row.text(4)))
            }
    }

    package func lastOutboxID(before instant: Instant?) throws(PostgresError) -> Int64 {
        try query("SELECT coalesce(max(id), 0) FROM webhook_outbox WHERE $1::bigint IS NULL OR at < $1::bigint",
                  [instant.map { String($0.milliseconds) }]).first?.int(0) ?? 0
    }

    private static let endpointColumns = """
        url, cursor, event_types, attempts, next_attempt_at, first_failed_at, last_error, last_error_at,
        delivered, failed, lease_id, lease_until
        """

    private static func endpointState(_ row: [String?]) -> EndpointState {
        var state = EndpointState(url: row.text(0), cursor: row.int(1))
        state.eventTypes = row.text(2).split(separator: ",").map(String.init)
        state.attempts = Int(row.int(3))
        state.nextAttemptAt = row.optionalInstant(4)
        state.firstFailedAt = row.optionalInstant(5)
        state.lastError = row[6]
        state.lastErrorAt = row.optionalInstant(7)
        state.delivered = row.int(8)
        state.failed = row.int(9)
        state.leaseID = row[10]
        state.leaseUntil = row.optionalInstant(11)
        return state
    }

    private static func values(_ state: EndpointState) -> [String?] {
        [state.url, String(state.cursor), state.eventTypes.joined(separator: ","), String(state.attempts),
         state.nextAttemptAt.map { String($0.milliseconds) }, state.firstFailedAt.map { String($0.milliseconds) }, state.lastError,
         state.lastErrorAt.map { String($0.milliseconds) }, String(state.delivered), String(state.failed), state.leaseID,
         state.leaseUntil.map { String($0.milliseconds) }]
    }

    /// `.skipIfHeld`: `FOR UPDATE SKIP LOCKED`, so a claim never waits on another instance's;
    /// `.wait`: `FOR UPDATE`.
    package func endpointState(_ url: String, lock: EndpointLock) throws(PostgresError) -> EndpointState? {
        let suffix = switch lock {
        case .none: ""
        case .skipIfHeld: " FOR UPDATE SKIP LOCKED"
        case .wait: " FOR UPDATE"
        }
        return try query("SELECT \(Self.endpointColumns) FROM webhook_endpoints WHERE url = $1" + suffix, [url]).first.map(Self.endpointState)
    }

    package func insertEndpoint(_ state: EndpointState) throws(PostgresError) {
        try query("INSERT INTO webhook_endpoints (\(Self.endpointColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
                  Self.values(state))
    }

    package func saveEndpoint(_ state: EndpointState) throws(PostgresError) {
        try query("""
            UPDATE webhook_endpoints SET cursor = $2, event_types = $3, attempts = $4, next_attempt_at = $5,
                first_failed_at = $6, last_error = $7, last_error_at = $8, delivered = $9, failed = $10, lease_id = $11,
                lease_until = $12
            WHERE url = $1
            """, Self.values(state))
    }

    package func endpointStatuses() throws(PostgresError) -> [WebhookEndpointStatus] {
        try query("""
            SELECT \(Self.endpointColumns),
                   (SELECT count(*) FROM webhook_outbox o WHERE o.id > e.cursor AND o.type = ANY(string_to_array(e.event_types, ','))),
                   (SELECT min(o.at) FROM webhook_outbox o WHERE o.id > e.cursor AND o.type = ANY(string_to_array(e.event_types, ',')))
            FROM webhook_endpoints e ORDER BY url
            """).map { WebhookEndpointStatus(state: Self.endpointState($0), pending: $0.int(12), oldestPendingAt: $0.optionalInstant(13)) }
    }

    package func pruneOutbox(before cutoff: Instant, limit: Int?) throws(PostgresError) -> Int {
        let done = """
            FROM webhook_outbox o WHERE o.at < $1::bigint AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e
              WHERE o.id > e.cursor AND o.type = ANY(string_to_array(e.event_types, ',')))
            """
        guard let limit else { return Int(try query("SELECT count(*) " + done, [String(cutoff.milliseconds)]).first?.int(0) ?? 0) }
        return try query("DELETE FROM webhook_outbox WHERE id IN (SELECT o.id \(done) ORDER BY o.id LIMIT $2) RETURNING 1",
                         [String(cutoff.milliseconds), String(limit)]).count
    }

    package func deleteEndpoint(_ url: String) throws(PostgresError) -> Bool {
        try !query("DELETE FROM webhook_endpoints WHERE url = $1 RETURNING 1", [url]).isEmpty
    }
}

import BatonStorage

/// The PostgreSQL schema: exactly the text of the top-level schema-postgresql.sql, embedded
/// at build time.
enum PostgresSchema {
    /// The schema version this build writes and reads.
    static let version: Int64 = 12
    /// schema-postgresql.sql's text.
    static let sql = String(decoding: PackageResources.schema_postgresql_sql, as: UTF8.self)
    /// Any number that names Baton's schema lock among the database's advisory locks.
    static let lockKey: Int64 = 0x6261_746F_6E  // "baton"

    /// Creates the schema when the database has none (if `create`); migrates a version-2 to -11
    /// schema to version 12; checks its version otherwise. Runs under a transaction-scoped advisory lock, so instances starting together
    /// create it once.
    /// - Returns: the schema version the database holds afterwards; nil when it has none and
    ///   `create` is false.
    static func prepare(_ connection: PostgresConnection, create: Bool) throws(PostgresError) -> Int64? {
        try connection.execute("BEGIN")
        do throws(PostgresError) {
            try connection.query("SELECT pg_advisory_xact_lock($1)", [String(lockKey)])
            let exists = try connection.query("SELECT to_regclass('baton_schema') IS NOT NULL").first?[0] == "t"
            if !exists {
                guard create else {
                    try connection.execute("ROLLBACK")
                    return nil
                }
                try connection.execute(sql)
            }
            var found = try storedVersion(connection)
            if found == 2 {
                try migrateFromVersion2(connection)
                found = try storedVersion(connection)
            }
            if found == 3 {
                try migrateFromVersion3(connection)
                found = try storedVersion(connection)
            }
            if found == 4 {
                try migrateFromVersion4(connection)
                found = try storedVersion(connection)
            }
            if found == 5 {
                try migrateFromVersion5(connection)
                found = try storedVersion(connection)
            }
            if found == 6 {
                try migrateFromVersion6(connection)
                found = try storedVersion(connection)
            }
            if found == 7 {
                try migrateFromVersion7(connection)
                found = try storedVersion(connection)
            }
            if found == 8 {
                try migrateFromVersion8(connection)
                found = try storedVersion(connection)
            }
            if found == 9 {
                try migrateFromVersion9(connection)
                found = try storedVersion(connection)
            }
            if found == 10 {
                try migrateFromVersion10(connection)
                found = try storedVersion(connection)
            }
            if found == 11 {
                try migrateFromVersion11(connection)
                found = try storedVersion(connection)
            }
            if found == version { try announceChanges(connection) }
            try connection.execute("COMMIT")
            return found
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Version 2 to 3, inside `prepare`'s transaction and lock: the audit kinds `key_recorded`
    /// and `key_replaced` (PostgreSQL alters a CHECK in place; the list is the one
    /// schema-postgresql.sql gives, taken from its text) and the table `key_fingerprint`, created
    /// with that file's exact statement. It stays empty until an instance starts with its key.
    static func migrateFromVersion2(_ connection: PostgresConnection) throws(PostgresError) {
        guard let keyTable = statement(in: sql, from: "CREATE TABLE key_fingerprint", to: ");") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-3 definitions")
        }
        try replaceAuditKinds(connection, version: 3)
        try connection.execute(keyTable)
        try connection.execute("UPDATE baton_schema SET version = 3")
    }

    /// Version 3 to 4, inside `prepare`'s transaction and lock: the revocation reason
    /// `signed_out`, the CHECK altered in place to schema-postgresql.sql's list.
    static func migrateFromVersion3(_ connection: PostgresConnection) throws(PostgresError) {
        guard let reasons = statement(in: sql, from: "CHECK (revoked_reason IN (", to: "))") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-4 definitions")
        }
        try connection.execute("ALTER TABLE chains DROP CONSTRAINT chains_revoked_reason_check")
        try connection.execute("ALTER TABLE chains ADD CONSTRAINT chains_revoked_reason_check \(reasons)")
        try connection.execute("UPDATE baton_schema SET version = 4")
    }

    /// Version 4 to 5, inside `prepare`'s transaction and lock: the tables `known_devices`
    /// (filled with the devices of the chains, so no device in use is reported as new),
    /// `webhook_outbox` and `webhook_endpoints`, created with schema-postgresql.sql's exact
    /// statements (its text from `CREATE TABLE known_devices` up to version 6's `proof_replays`).
    static func migrateFromVersion4(_ connection: PostgresConnection) throws(PostgresError) {
        guard let start = sql.firstRange(of: "CREATE TABLE known_devices"),
              let end = sql.firstRange(of: "-- The DPoP proofs"), start.upperBound < end.lowerBound else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-5 definitions")
        }
        try connection.execute(String(sql[start.lowerBound..<end.lowerBound]))
        try connection.execute("""
            INSERT INTO known_devices (user_id, device_id, first_seen)
            SELECT user_id, device_id, min(created_at) FROM chains WHERE user_id IN (SELECT id FROM users) GROUP BY user_id, device_id
            """)
        try connection.execute("UPDATE baton_schema SET version = 5")
    }

    /// Version 5 to 6, inside `prepare`'s transaction and lock: the column `chains.jkt` (DPoP
    /// binding; NULL for every existing chain, which stays a bearer chain) with its CHECK, the
    /// table `proof_replays`, and the audit kind `proof_failed` (the CHECK altered in place to
    /// schema-postgresql.sql's list).
    static func migrateFromVersion5(_ connection: PostgresConnection) throws(PostgresError) {
        guard let column = statement(in: sql, from: "jkt ", to: "= 43)"),
              let replays = statement(in: sql, from: "CREATE TABLE proof_replays", to: ");"),
              let replaysIndex = statement(in: sql, from: "CREATE INDEX proof_replays_by_expiry", to: ";") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-6 definitions")
        }
        try connection.execute("ALTER TABLE chains ADD COLUMN \(column)")
        try connection.execute(replays)
        try connection.execute(replaysIndex)
        try replaceAuditKinds(connection, version: 6)
        try connection.execute("UPDATE baton_schema SET version = 6")
    }

    /// Version 6 to 7, inside `prepare`'s transaction and lock: the table `webhook_deliveries`
    /// (each pending event's own retry state), filled with every event each endpoint had not
    /// reached yet (after its cursor, of its types), fresh: nothing pending is lost.
    static func migrateFromVersion6(_ connection: PostgresConnection) throws(PostgresError) {
        guard let table = statement(in: sql, from: "CREATE TABLE webhook_deliveries", to: ");"),
              let index = statement(in: sql, from: "CREATE INDEX webhook_deliveries_due", to: ";") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-7 definitions")
        }
        try connection.execute(table)
        try connection.execute(index)
        try connection.execute("""
            INSERT INTO webhook_deliveries (endpoint, event_id, alert, due_at)
            SELECT e.url, o.id, o.type IN (\(WebhookEventType.alertTypesSQL)), 0
            FROM webhook_endpoints e JOIN webhook_outbox o ON o.id > e.cursor AND o.type = ANY(string_to_array(e.event_types, ','))
            """)
        try connection.execute("UPDATE baton_schema SET version = 7")
    }

    /// Version 7 to 8, inside `prepare`'s transaction and lock: the token key ring (the table
    /// `token_keys`, the column `chains.head_key`, 0 for every existing chain: the key file's own
    /// key made their heads), the revocation reason `key_retired` and the audit kinds
    /// `key_rotated` and `key_retired` (the CHECKs altered in place to schema-postgresql.sql's lists).
    static func migrateFromVersion7(_ connection: PostgresConnection) throws(PostgresError) {
        guard let column = statement(in: sql, from: "head_key ", to: "= 0)"),
              let table = statement(in: sql, from: "CREATE TABLE token_keys", to: ");"),
              let reasons = statement(in: sql, from: "CHECK (revoked_reason IN (", to: "))") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-8 definitions")
        }
        try connection.execute("ALTER TABLE chains ADD COLUMN \(column)")
        try connection.execute("ALTER TABLE chains DROP CONSTRAINT chains_revoked_reason_check")
        try connection.execute("ALTER TABLE chains ADD CONSTRAINT chains_revoked_reason_check \(reasons)")
        try replaceAuditKinds(connection, version: 8)
        try connection.execute(table)
        try connection.execute("UPDATE baton_schema SET version = 8")
    }

    /// Version 8 to 9, inside `prepare`'s transaction and lock: the columns `chains.last_used_at`,
    /// `last_used_ip` and `last_used_user_agent` (the last use kept on the chain's row, as
    /// schema-postgresql.sql defines them), filled from each chain's newest use in the audit
    /// table (`SessionActivity.lastUseFromAuditSQL`): the session list shows what it showed before.
    static func migrateFromVersion8(_ connection: PostgresConnection) throws(PostgresError) {
        guard let columns = statement(in: sql, from: "last_used_at ", to: "last_used_user_agent text") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-9 definitions")
        }
        let added = columns.split(separator: ",").map { "ADD COLUMN \($0)" }.joined(separator: ",")
        try connection.execute("ALTER TABLE chains \(added)")
        try connection.execute(SessionActivity.lastUseFromAuditSQL)
        try connection.execute("UPDATE baton_schema SET version = 9")
    }

    /// Version 9 to 10, inside `prepare`'s transaction and lock: the column `chains.head_attempt`
    /// (R3b), NULL for every existing head: made by a login or by a client that numbered no
    /// attempts, which keeps R3a as it was.
    static func migrateFromVersion9(_ connection: PostgresConnection) throws(PostgresError) {
        guard let column = statement(in: sql, from: "head_attempt ", to: ">= 1)") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-10 definitions")
        }
        try connection.execute("ALTER TABLE chains ADD COLUMN \(column)")
        try connection.execute("UPDATE baton_schema SET version = 10")
    }

    /// Version 10 to 11, inside `prepare`'s transaction and lock: the tables `identity_issuers`
    /// and `identity_links` and the links' index, created with schema-postgresql.sql's own statements.
    static func migrateFromVersion10(_ connection: PostgresConnection) throws(PostgresError) {
        guard let tables = statement(in: sql, from: "CREATE TABLE identity_issuers", to: "identity_links (user_id);") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-11 definitions")
        }
        try connection.execute(tables)
        try connection.execute("UPDATE baton_schema SET version = 11")
    }

    /// Version 11 to 12, inside `prepare`'s transaction and lock: no index `audit_by_user` (no
    /// query used it; an exchange writes one index entry fewer).
    static func migrateFromVersion11(_ connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("DROP INDEX IF EXISTS audit_by_user")
        try connection.execute("UPDATE baton_schema SET version = 12")
    }

    /// Replaces the audit table's CHECK of kinds with schema-postgresql.sql's list
    /// (PostgreSQL alters a CHECK in place), for the migration to `version`.
    private static func replaceAuditKinds(_ connection: PostgresConnection, version: Int) throws(PostgresError) {
        guard let kinds = statement(in: sql, from: "CHECK (kind IN (", to: "))") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the version-\(version) definitions")
        }
        try connection.execute("ALTER TABLE audit DROP CONSTRAINT audit_kind_check")
        try connection.execute("ALTER TABLE audit ADD CONSTRAINT audit_kind_check \(kinds)")
    }

    /// The text of `text` from `start` through the first `end` after it.
    private static func statement(in text: String, from start: String, to end: String) -> String? {
        guard let lower = text.firstRange(of: start), let upper = text[lower.upperBound...].firstRange(of: end) else { return nil }
        return String(text[lower.lowerBound..<upper.upperBound])
    }

    /// The triggers that announce changes on `baton_heads` (`HeadWatch`), created from
    /// schema-postgresql.sql's own statements when any is missing (a version-9 database made
    /// before them). They hold no data, so the schema version does not change.
    static func announceChanges(_ connection: PostgresConnection) throws(PostgresError) {
        let present = try connection.query("""
            SELECT (SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal
                    AND tgname IN ('chains_announce', 'chains_announce_truncate', 'users_announce', 'users_announce_truncate'))
                 + (SELECT count(*) FROM pg_proc WHERE proname IN ('baton_announce_chain', 'baton_announce_everything')
                    AND prosrc LIKE '%after-commit%')
            """).first?[0]
        guard present != "6" else { return }
        guard let statements = statement(in: sql, from: "-- BEGIN ANNOUNCEMENTS", to: "-- END ANNOUNCEMENTS") else {
            throw PostgresError(message: "schema-postgresql.sql lacks the announcement triggers")
        }
        try connection.execute(statements)
    }

    /// The version the database holds.
    static func storedVersion(_ connection: PostgresConnection) throws(PostgresError) -> Int64 {
        Int64(try connection.query("SELECT version FROM baton_schema").first?[0] ?? "") ?? 0
    }
}

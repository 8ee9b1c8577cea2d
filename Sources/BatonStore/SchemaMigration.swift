import BatonStorage
import CSQLite

/// Migrates a version-1 to -11 database to the current version (12) in place, inside the
/// caller's transaction (`Schema.prepare` opens it with foreign keys off, as the procedure
/// requires).
///
/// Version 2 added `chains.auth_time` and `chains.confirm_failures`, the revocation reason
/// `confirm_failed` and the audit kinds `step_up_succeeded` and `step_up_failed`; version 3
/// the audit kinds `key_recorded` and `key_replaced` and the table `key_fingerprint` (which
/// stays empty until the database is next opened with its key: `TokenStore.adoptKey`); version 4
/// the revocation reason `signed_out` (a user signed a session out from another); version 5
/// the tables `known_devices` (filled from the chains' devices), `webhook_outbox` and
/// `webhook_endpoints`; version 6 the column `chains.jkt` (DPoP binding, NULL for every chain
/// that exists before) and the audit kind `proof_failed`; version 7 the table
/// `webhook_deliveries` (each pending webhook event's own retry state), filled with the events
/// each endpoint had not reached yet; version 8 the table `token_keys` (the token key ring),
/// the column `chains.head_key` (0, the key file's key, for every chain that exists before),
/// the revocation reason `key_retired` and the audit kinds `key_rotated` and `key_retired`;
/// version 9 the columns `chains.last_used_at`, `last_used_ip` and `last_used_user_agent` (the
/// last use kept on the chain's row), filled from each chain's newest use in the audit table;
/// version 10 the column `chains.head_attempt` (R3b), NULL for every head made before; version
/// 11 the tables `identity_issuers` and `identity_links` (login through an identity provider);
/// version 12 no index `audit_by_user` (no query used it; every exchange wrote an entry in it).
/// Changed CHECK constraints cannot be altered, so the tables that have them are rebuilt
/// (sqlite.org/lang_altertable.html §7). The new definitions are read from schema.sql itself
/// (created in a scratch in-memory database), so a migrated file has exactly the schema a
/// new one gets: schema.sql stays the single source of truth.
enum SchemaMigration {
    /// Whether a database of `version` is migrated by this build.
    static func migrates(_ version: Int64) -> Bool { (1...11).contains(version) }

    /// The tables whose definitions changed since `version`: `chains` (every older version:
    /// version 4's `signed_out`, version 6's `jkt`, version 9's `last_used_*`) and `audit` (before
    /// version 8: new kinds, version 6's `proof_failed`, version 8's `key_rotated` and
    /// `key_retired`). The columns are added by the rebuild too (version 6's `jkt`, version 8's
    /// `head_key`, version 9's), not `ADD COLUMN`, so the stored `CREATE TABLE` text is
    /// schema.sql's exactly.
    static func rebuiltTables(since version: Int64) -> [String] {
        switch version {
        case 10...: []  // 12 drops an index only
        case 8, 9: ["chains"]
        default: ["chains", "audit"]
        }
    }

    /// Rebuilds the tables changed since `version` from `schemaSQL`'s definitions, copies every
    /// row, creates the tables and indexes it lacks, and sets `user_version` to the current
    /// version. A version-1 chain's `auth_time` is its `created_at` (its login, the last
    /// authentication known), its `confirm_failures` 0; every chain's last use is its newest
    /// use in the audit table (`SessionActivity.lastUseFromAuditSQL`).
    /// - Throws: `SQLiteError`; any foreign-key violation found before commit fails it too.
    static func migrate(_ connection: Connection, from version: Int64, to schemaSQL: String) throws(SQLiteError) {
        let rebuiltTables = rebuiltTables(since: version)
        let target = try definitions(of: rebuiltTables, in: schemaSQL)
        // Renaming the old tables out of the way first lets the new ones be created under their
        // final names with schema.sql's exact text (a rename would rewrite it as `"chains"`).
        // legacy_alter_table=ON with foreign keys off leaves `tokens REFERENCES chains(id)` as
        // written, so it refers to the new `chains` (lang_altertable.html, "ALTER TABLE RENAME").
        try connection.execute("PRAGMA legacy_alter_table = ON")
        defer { _ = try? connection.execute("PRAGMA legacy_alter_table = OFF") }
        for table in rebuiltTables {
            try connection.execute("ALTER TABLE \(table) RENAME TO \(table)_v1")
        }
        for definition in target where definition.type == "table" {
            try connection.execute(definition.sql)
        }
        if rebuiltTables.contains("chains") {
            // A version-1 chain has no step-up columns: its auth_time is its login, no failures.
            let stepUp = version == 1 ? "created_at, 0" : "auth_time, confirm_failures"
            // Version 6's binding and version 8's head key are copied from a database that has them
            // (before version 8 every head is key 0's, the key file's); the last use is filled below.
            let jkt = version >= 6 ? "jkt" : "NULL"
            let headKey = version >= 8 ? "head_key" : "0"
            // Version 9's last use is copied too (before it, filled from the audit table below).
            let lastUse = version >= 9 ? "last_used_at, last_used_ip, last_used_user_agent" : "NULL, NULL, NULL"
            try connection.execute("""
                INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash,
                                    head_issued_at, head_expires_at, head_presented, last_exchange_at, auth_time,
                                    confirm_failures, revoked_at, revoked_reason, jkt, head_key,
                                    last_used_at, last_used_ip, last_used_user_agent)
                SELECT id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash,
                       head_issued_at, head_expires_at, head_presented, last_exchange_at, \(stepUp), revoked_at, revoked_reason, \(jkt),
                       \(headKey), \(lastUse)
                FROM chains_v1
                """)
        }
        if rebuiltTables.contains("audit") {
            try connection.execute("""
                INSERT INTO audit (id, at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail)
                SELECT id, at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail FROM audit_v1
                """)
        }
        // Dropping the old tables drops their indexes, whose names the new ones take.
        for table in rebuiltTables {
            try connection.execute("DROP TABLE \(table)_v1")
        }
        for definition in target where definition.type == "index" {
            try connection.execute(definition.sql)
        }
        // Tables (and their indexes) that are new since `version`, created as schema.sql has them.
        let existing = Set(try connection.statement("SELECT name FROM sqlite_master").all { $0.text(0) })
        for definition in try definitions(of: nil, in: schemaSQL) where !existing.contains(definition.name) && !rebuiltTables.contains(definition.table) {
            try connection.execute(definition.sql)
        }
        // Version 12: no `audit_by_user` (a rebuilt audit table lost it already, with any index
        // an operator had added to the old table; from version 8 on, only Baton's is dropped).
        try connection.execute("DROP INDEX IF EXISTS audit_by_user")
        // Version 9: each chain's last use, as the session list read it from the audit table
        // before, kept on its row from now on (the statement reads the audit table once).
        if version < 9 {
            try connection.execute(SessionActivity.lastUseFromAuditSQL)
        }
        // Version 5: the devices already in use are known, so the upgrade reports none as new.
        try connection.execute("""
            INSERT OR IGNORE INTO known_devices (user_id, device_id, first_seen)
            SELECT user_id, device_id, min(created_at) FROM chains WHERE user_id IN (SELECT id FROM users) GROUP BY user_id, device_id
            """)
        // Version 7: what each endpoint had not reached yet (after its cursor, of its types) is
        // pending for it, fresh: the migration loses no undelivered event. Only from an older
        // version: a version-7 cursor no longer moves, and what it delivered since is not pending.
        if version < 7 {
            try connection.execute("""
                INSERT OR IGNORE INTO webhook_deliveries (endpoint, event_id, alert, due_at)
                SELECT e.url, o.id, o.type IN (\(WebhookEventType.alertTypesSQL)), 0
                FROM webhook_endpoints e JOIN webhook_outbox o ON o.id > e.cursor AND instr(',' || e.event_types || ',', ',' || o.type || ',') > 0
                """)
        }
        try connection.execute("PRAGMA user_version = \(Schema.version)")
        // §7 step 10: "run PRAGMA foreign_key_check to verify that the schema change did not
        // break any foreign key constraints."
        let violations = try connection.statement("PRAGMA foreign_key_check").all { $0.text(0) }
        guard violations.isEmpty else {
            throw SQLiteError(code: SQLITE_CONSTRAINT, message: "migration to schema version \(Schema.version) found foreign key violations in \(Set(violations).sorted())")
        }
    }

    /// The `CREATE` statements of `tables` (every table when nil) and their indexes as
    /// `schemaSQL` defines them, tables first.
    static func definitions(of tables: [String]?, in schemaSQL: String) throws(SQLiteError) -> [(type: String, name: String, table: String, sql: String)] {
        let scratch = try Connection(path: ":memory:")
        defer { scratch.close() }
        try scratch.execute(schemaSQL)
        let filter = tables.map { "AND tbl_name IN (\($0.map { "'\($0)'" }.joined(separator: ", ")))" } ?? ""
        return try scratch.statement("""
            SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \(filter)
            ORDER BY type = 'index', name
            """).all { (type: $0.text(0), name: $0.text(1), table: $0.text(2), sql: $0.text(3)) }
    }
}

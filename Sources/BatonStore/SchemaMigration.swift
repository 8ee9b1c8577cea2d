import CSQLite

/// Migrates a version-1 database to version 2 in place, inside the caller's transaction
/// (`Schema.prepare` opens it with foreign keys off, as the procedure requires).
///
/// Version 2 adds `chains.auth_time` and `chains.confirm_failures`, the revocation reason
/// `confirm_failed` and the audit kinds `step_up_succeeded` and `step_up_failed`. Changed
/// CHECK constraints cannot be altered, so `chains` and `audit` are rebuilt
/// (sqlite.org/lang_altertable.html §7). The new definitions are read from schema.sql itself
/// (created in a scratch in-memory database), so a migrated file has exactly the schema a
/// new one gets: schema.sql stays the single source of truth.
enum SchemaMigration {
    /// The tables version 2 redefines.
    static let rebuiltTables = ["chains", "audit"]

    /// Rebuilds `chains` and `audit` from `schemaSQL`'s definitions, copies every row, and sets
    /// `user_version` to 2. An existing chain's `auth_time` is its `created_at` (its login, the
    /// last authentication known), its `confirm_failures` 0.
    /// - Throws: `SQLiteError`; any foreign-key violation found before commit fails it too.
    static func fromVersion1(_ connection: Connection, to schemaSQL: String) throws(SQLiteError) {
        let target = try definitions(in: schemaSQL)
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
        try connection.execute("""
            INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash,
                                head_issued_at, head_expires_at, head_presented, last_exchange_at, auth_time,
                                confirm_failures, revoked_at, revoked_reason)
            SELECT id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash,
                   head_issued_at, head_expires_at, head_presented, last_exchange_at, created_at,
                   0, revoked_at, revoked_reason
            FROM chains_v1
            """)
        try connection.execute("""
            INSERT INTO audit (id, at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail)
            SELECT id, at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail FROM audit_v1
            """)
        // Dropping the old tables drops their indexes, whose names the new ones take.
        for table in rebuiltTables {
            try connection.execute("DROP TABLE \(table)_v1")
        }
        for definition in target where definition.type == "index" {
            try connection.execute(definition.sql)
        }
        try connection.execute("PRAGMA user_version = 2")
        // §7 step 10: "run PRAGMA foreign_key_check to verify that the schema change did not
        // break any foreign key constraints."
        let violations = try connection.statement("PRAGMA foreign_key_check").all { $0.text(0) }
        guard violations.isEmpty else {
            throw SQLiteError(code: SQLITE_CONSTRAINT, message: "migration to schema version 2 found foreign key violations in \(Set(violations).sorted())")
        }
    }

    /// The `CREATE` statements of the rebuilt tables and their indexes as `schemaSQL` defines
    /// them, tables first.
    static func definitions(in schemaSQL: String) throws(SQLiteError) -> [(type: String, sql: String)] {
        let scratch = try Connection(path: ":memory:")
        defer { scratch.close() }
        try scratch.execute(schemaSQL)
        let names = rebuiltTables.map { "'\($0)'" }.joined(separator: ", ")
        return try scratch.statement("""
            SELECT type, sql FROM sqlite_master WHERE tbl_name IN (\(names)) AND sql IS NOT NULL
            ORDER BY type = 'index', name
            """).all { (type: $0.text(0), sql: $0.text(1)) }
    }
}

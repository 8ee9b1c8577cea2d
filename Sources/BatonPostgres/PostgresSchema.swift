
/// The PostgreSQL schema: exactly the text of the top-level schema-postgresql.sql, embedded
/// at build time.
enum PostgresSchema {
    /// The schema version this build writes and reads.
    static let version: Int64 = 2
    /// schema-postgresql.sql's text.
    static let sql = String(decoding: PackageResources.schema_postgresql_sql, as: UTF8.self)
    /// Any number that names Baton's schema lock among the database's advisory locks.
    private static let lockKey: Int64 = 0x6261_746F_6E  // "baton"

    /// Creates the schema when the database has none (if `create`); checks its version
    /// otherwise. Runs under a transaction-scoped advisory lock, so instances starting together
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
            let found = try storedVersion(connection)
            try connection.execute("COMMIT")
            return found
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The version the database holds.
    static func storedVersion(_ connection: PostgresConnection) throws(PostgresError) -> Int64 {
        Int64(try connection.query("SELECT version FROM baton_schema").first?[0] ?? "") ?? 0
    }
}

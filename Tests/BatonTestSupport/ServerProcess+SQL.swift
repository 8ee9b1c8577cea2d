import BatonCore
import BatonStore

extension ServerProcess {
    /// Runs `sql` on the server's database from another process, as an operator's shell would:
    /// the sqlite3 library on a SQLite file, psql on a `postgresql://` URI. For tests that must
    /// put a row in a state no API call reaches quickly (a chain a month old).
    package func executeSQL(_ sql: String) throws {
        if databasePath.hasPrefix("postgresql://") || databasePath.hasPrefix("postgres://") {
            try PostgresBinaries.find().psql(sql, uri: databasePath)
        } else {
            let connection = try Connection(path: databasePath)
            defer { connection.close() }
            try connection.execute(sql)
        }
    }

    /// Moves every timestamp of the chain `seconds` into the past, as a login that long ago
    /// would have left it (created, issued, expiry, authentication, last exchange).
    package func age(chain: String, by seconds: Int64) throws {
        let id = ChainID(hex: chain)!.rawValue, ms = seconds * 1000
        try executeSQL("""
            UPDATE chains SET created_at = created_at - \(ms), head_issued_at = head_issued_at - \(ms),
                              head_expires_at = head_expires_at - \(ms), auth_time = auth_time - \(ms)
            WHERE id = \(id)
            """)
    }
}

import BatonCore
import BatonStore

/// Whether `--db` names a PostgreSQL database (a libpq URI) rather than a SQLite file.
package func isPostgresURI(_ database: String) -> Bool {
    database.hasPrefix("postgresql://") || database.hasPrefix("postgres://")
}

/// The rows of `sql` on `database` (what `--db` takes), read from another process as an
/// operator's shell would: the sqlite3 library on a SQLite file (read-write, so a WAL left by
/// a killed server is recovered), psql on a PostgreSQL URI. Every column as text, NULL as "";
/// for integers, hex and short words (psql separates columns with `|`).
package func queryDatabase(_ sql: String, at database: String) throws -> [[String]] {
    if isPostgresURI(database) {
        let output = try PostgresBinaries.find().psql(sql, uri: database)
        return output.isEmpty ? [] : output.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
    }
    let connection = try Connection(path: database)
    defer { connection.close() }
    return try connection.statement(sql).all { row in (0..<row.columnCount).map { row.optionalText($0) ?? "" } }
}

extension ServerProcess {
    /// Runs `sql` on the server's database from another process, as an operator's shell would:
    /// the sqlite3 library on a SQLite file, psql on a `postgresql://` URI. For tests that must
    /// put a row in a state no API call reaches quickly (a chain a month old).
    package func executeSQL(_ sql: String) throws {
        if isPostgresURI(databasePath) {
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

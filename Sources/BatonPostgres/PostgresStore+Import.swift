import BatonCore
import BatonStorage

/// What `baton admin migrate` wrote, table by table.
package struct ImportCounts: Sendable, Equatable {
    package var users = 0
    package var chains = 0
    package var lineageRows = 0
    package var auditEvents = 0
}

extension PostgresStore {
    /// Writes `tables` (another store's dump) into this database in one transaction, keeping
    /// ids, then checks that each table holds exactly as many rows as the dump. Refuses a
    /// database that already has users, chains or audit events, so it never runs twice.
    /// - Throws: `.invalidArgument` (not empty, counts differ: nothing written), `.unavailable`.
    package func importDump(_ tables: [TableDump]) throws(BatonError) -> ImportCounts {
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<ImportCounts, BatonError> in
            // Two migrations started at once: the second waits here, then finds the rows.
            try transaction.query("LOCK TABLE users, chains, tokens, audit IN EXCLUSIVE MODE")
            let existing = try transaction.query("SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM chains), (SELECT count(*) FROM audit)")
                .first?.map { Int($0 ?? "") ?? 0 } ?? [0, 0, 0]
            guard existing.allSatisfy({ $0 == 0 }) else {
                return .failure(.invalidArgument(
                    "PostgreSQL database \(address) is not empty (\(existing[0]) users, \(existing[1]) chains, \(existing[2]) audit events): migrate writes only into an empty database"))
            }
            var counts = ImportCounts()
            for dump in tables {
                // An instance started on the empty database may have recorded its key: the
                // SQLite database's key is the one its tokens were signed with.
                if dump.table == "key_fingerprint" || dump.table == "token_keys" { try transaction.query("DELETE FROM \(dump.table)") }
                let placeholders = dump.columns.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
                let sql = "INSERT INTO \(dump.table) (\(dump.columns.joined(separator: ", "))) VALUES (\(placeholders))"
                for row in dump.rows {
                    try transaction.query(sql, zip(dump.columns, row).map { column, value in Self.parameter(value, column: column) })
                }
                let stored = Int(try transaction.query("SELECT count(*) FROM \(dump.table)").first?[0] ?? "") ?? -1
                guard stored == dump.rows.count else {
                    transaction.isRollbackOnly = true
                    return .failure(.invalidArgument("table \(dump.table): \(dump.rows.count) rows read but \(stored) stored; nothing was written"))
                }
                switch dump.table {
                case "users": counts.users = stored
                case "chains": counts.chains = stored
                case "tokens": counts.lineageRows = stored
                case "audit": counts.auditEvents = stored
                default: break  // key_fingerprint: one row or none; token_keys: a few
                }
            }
            // New users and audit events continue after the copied ids.
            for table in ["users", "audit"] {
                try transaction.query("SELECT setval(pg_get_serial_sequence('\(table)', 'id'), GREATEST((SELECT max(id) FROM \(table)), 1))")
            }
            return .success(counts)
        }
        return try result.get()
    }

    /// A dumped value as a text parameter: bytea in hex, SQLite's 0/1 flag as a boolean.
    private static func parameter(_ value: TableDump.Value?, column: String) -> String? {
        switch value {
        case nil: nil
        case .int(let number) where column == "head_presented": number != 0 ? "true" : "false"
        case .int(let number): String(number)
        case .text(let text): text
        case .blob(let bytes): ByteaText.encode(bytes)
        }
    }
}

import BatonCore
import BatonStorage
import CSQLite

extension TokenStore {
    /// Every row of users, chains, tokens and audit, read in one snapshot (one read
    /// transaction on a WAL reader), for `baton admin migrate`.
    /// - Throws: `.unavailable` when the file cannot be read.
    package func dump() throws(BatonError) -> [TableDump] {
        try readConnection { connection throws(SQLiteError) -> [TableDump] in
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            var tables: [TableDump] = []
            for (table, columns) in TableDump.layout {
                let rows = try connection.statement("SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY 1").all { row in
                    (0..<Int32(columns.count)).map { index -> TableDump.Value? in
                        switch row.storageClass(index) {
                        case SQLITE_NULL: nil
                        case SQLITE_INTEGER: .int(row.int(index))
                        case SQLITE_BLOB: .blob(row.blob(index))
                        default: .text(row.text(index))
                        }
                    }
                }
                tables.append(TableDump(table: table, columns: columns, rows: rows))
            }
            return tables
        }
    }
}

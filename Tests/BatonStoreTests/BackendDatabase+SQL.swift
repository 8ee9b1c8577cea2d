@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore

extension BackendDatabase {
    /// The rows of `sql`, read straight from the database on a connection of its own, every
    /// column as text (nil for NULL). Blobs need `lower(hex(x))` on SQLite, `encode(x, 'hex')`
    /// on PostgreSQL to come out alike.
    func rows(_ sql: String) throws -> [[String?]] {
        switch backend {
        case .sqlite:
            let connection = try Connection(path: location)
            defer { connection.close() }
            return try connection.statement(sql).all { row in (0..<row.columnCount).map { row.optionalText($0) } }
        case .postgresql:
            let connection = try PostgresConnection(uri: location, statementTimeout: .seconds(10))
            defer { connection.close() }
            return try connection.query(sql)
        }
    }

    /// Audit rows, oldest first, read straight from the database.
    func auditEvents(kind: AuditKind? = nil) throws -> [(kind: String, chainID: Int64?, generation: Int64?, ip: String?, detail: String)] {
        try rows("SELECT kind, chain_id, generation, ip, detail FROM audit ORDER BY id").map {
            (kind: $0[0] ?? "", chainID: $0[1].flatMap { Int64($0) }, generation: $0[2].flatMap { Int64($0) }, ip: $0[3], detail: $0[4] ?? "")
        }.filter { kind == nil || $0.kind == kind!.rawValue }
    }
}

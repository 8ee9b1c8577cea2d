import BatonCore
import BatonOperations
import BatonStorage

/// The token key ring's rows on SQLite (`token_keys`, `chains.head_key`; schema version 8).
extension SQLiteTransaction {
    /// A chain holds a token of its head's key while it is not revoked and not past its
    /// absolute life or exchange window (the prune bounds with the cutoff `?1` now).
    private static let live = "revoked_at IS NULL AND created_at + ?2 >= ?1 AND head_expires_at + ?3 >= ?1"

    private static func parameters(_ bounds: PruneBounds) -> [SQLValue] {
        [.int(bounds.cutoff.milliseconds), .int(bounds.maxSession.wholeMilliseconds), .int(bounds.exchangeWindow.wholeMilliseconds)]
    }

    package func recordedKeyTime() throws(SQLiteError) -> Instant? {
        try connection.statement("SELECT recorded_at FROM key_fingerprint WHERE id = 1").first { Instant(milliseconds: $0.int(0)) }
    }

    package func tokenKeys() throws(SQLiteError) -> [TokenKeyRow] {
        try connection.statement("SELECT id, wrapped, fingerprint, created_at, retired_at FROM token_keys ORDER BY id").all { row in
            TokenKeyRow(id: UInt32(row.int(0)), wrapped: row.isNull(1) ? nil : row.blob(1), fingerprint: row.text(2),
                        createdAt: Instant(milliseconds: row.int(3)), retiredAt: row.optionalInt(4).map(Instant.init(milliseconds:)))
        }
    }

    package func insertTokenKey(_ row: TokenKeyRow) throws(SQLiteError) {
        try connection.statement("INSERT INTO token_keys (id, wrapped, fingerprint, created_at) VALUES (?, ?, ?, ?)")
            .execute([.int(Int64(row.id)), row.wrapped.map { .blob($0) } ?? .null, .text(row.fingerprint), .int(row.createdAt.milliseconds)])
    }

    package func retireTokenKey(_ id: UInt32, now: Instant) throws(SQLiteError) {
        try connection.statement("UPDATE token_keys SET retired_at = ? WHERE id = ? AND retired_at IS NULL")
            .execute([.int(now.milliseconds), .int(Int64(id))])
    }

    package func deleteTokenKeys() throws(SQLiteError) {
        try connection.statement("DELETE FROM token_keys").execute([])
    }

    package func liveChainIDs(ofKey id: UInt32, _ bounds: PruneBounds) throws(SQLiteError) -> [ChainID] {
        try connection.statement("SELECT id FROM chains WHERE head_key = ?4 AND \(Self.live) ORDER BY id")
            .all(Self.parameters(bounds) + [.int(Int64(id))]) { ChainID(rawValue: $0.int(0)) }
    }

    package func liveChainCounts(_ bounds: PruneBounds) throws(SQLiteError) -> [UInt32: Int] {
        let rows = try connection.statement("SELECT head_key, count(*) FROM chains WHERE \(Self.live) GROUP BY head_key")
            .all(Self.parameters(bounds)) { (UInt32($0.int(0)), Int($0.int(1))) }
        return Dictionary(rows, uniquingKeysWith: +)
    }
}

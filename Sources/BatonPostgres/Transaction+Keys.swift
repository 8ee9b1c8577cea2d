import BatonCore
import BatonOperations
import BatonStorage

/// The token key ring's rows on PostgreSQL (`token_keys`, `chains.head_key`; schema version 8).
extension Transaction {
    /// A chain holds a token of its head's key while it is not revoked and not past its
    /// absolute life or exchange window (`$1` now, `$2` max session, `$3` exchange window).
    private static let live =
        "revoked_at IS NULL AND created_at + $2::bigint >= $1::bigint AND head_expires_at + $3::bigint >= $1::bigint"

    private static func values(_ bounds: PruneBounds) -> [String?] {
        [String(bounds.cutoff.milliseconds), String(bounds.maxSession.wholeMilliseconds), String(bounds.exchangeWindow.wholeMilliseconds)]
    }

    package func recordedKeyTime() throws(PostgresError) -> Instant? {
        try query("SELECT recorded_at FROM key_fingerprint WHERE id = 1").first?.optionalInstant(0)
    }

    package func tokenKeys() throws(PostgresError) -> [TokenKeyRow] {
        try query("SELECT id, wrapped, fingerprint, created_at, retired_at FROM token_keys ORDER BY id").map { row in
            TokenKeyRow(id: UInt32(row.int(0)), wrapped: row[1] == nil ? nil : ByteaText.decode(row[1]), fingerprint: row.text(2),
                        createdAt: row.instant(3), retiredAt: row.optionalInstant(4))
        }
    }

    package func insertTokenKey(_ row: TokenKeyRow) throws(PostgresError) {
        try query("INSERT INTO token_keys (id, wrapped, fingerprint, created_at) VALUES ($1, $2, $3, $4)",
                  [String(row.id), row.wrapped.map(ByteaText.encode), row.fingerprint, String(row.createdAt.milliseconds)])
    }

    package func retireTokenKey(_ id: UInt32, now: Instant) throws(PostgresError) {
        try query("UPDATE token_keys SET retired_at = $1 WHERE id = $2 AND retired_at IS NULL", [String(now.milliseconds), String(id)])
    }

    package func deleteTokenKeys() throws(PostgresError) {
        try query("DELETE FROM token_keys")
    }

    package func liveChainIDs(ofKey id: UInt32, _ bounds: PruneBounds) throws(PostgresError) -> [ChainID] {
        try query("SELECT id FROM chains WHERE head_key = $4::bigint AND \(Self.live) ORDER BY id", Self.values(bounds) + [String(id)])
            .map { ChainID(rawValue: $0.int(0)) }
    }

    package func liveChainCounts(_ bounds: PruneBounds) throws(PostgresError) -> [UInt32: Int] {
        let rows = try query("SELECT head_key, count(*) FROM chains WHERE \(Self.live) GROUP BY head_key", Self.values(bounds))
        return Dictionary(rows.map { (UInt32($0.int(0)), Int($0.int(1))) }, uniquingKeysWith: +)
    }
}

import BatonCore
import BatonStorage

extension TokenStore {
    /// The whole lineage of chain `id`, read in one snapshot and assembled by
    /// `ChainLineage(id:chain:endedTokens:trail:)` (the same for both stores).
    /// - Throws: `.chainNotFound` (never existed, or pruned).
    package func lineage(of id: ChainID) throws(BatonError) -> ChainLineage {
        let result = try readConnection { connection throws(SQLiteError) -> Result<ChainLineage, BatonError> in
            guard let chain = try connection.statement("""
                SELECT c.device_id, c.device_class, c.created_at, c.head_generation, c.head_issued_at, c.revoked_at,
                       c.revoked_reason, u.username, c.device_name, c.jkt
                FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = ?
                """).first([.int(id.rawValue)], { row in
                    ChainLineage.ChainRow(
                        username: row.text(7), deviceID: row.text(0), deviceClass: DeviceClass(rawValue: row.text(1)) ?? .other,
                        deviceName: row.optionalText(8), createdAt: Instant(milliseconds: row.int(2)), headGeneration: Int(row.int(3)),
                        headIssuedAt: Instant(milliseconds: row.int(4)), revokedAt: row.optionalInt(5).map(Instant.init(milliseconds:)),
                        revocation: row.optionalText(6).flatMap(RevocationReason.init(rawValue:)), jkt: row.optionalText(9))
                })
            else { return .failure(.chainNotFound(id)) }
            let tokens = try connection.statement("""
                SELECT generation, issued_at, ended_at, ended_by, ip, user_agent, device_id FROM tokens
                WHERE chain_id = ? ORDER BY generation, issued_at
                """).all([.int(id.rawValue)]) { row in
                    ChainLineage.endedToken(
                        generation: Int(row.int(0)), issuedAt: Instant(milliseconds: row.int(1)), endedAt: Instant(milliseconds: row.int(2)),
                        endedBy: row.text(3), ip: row.optionalText(4), userAgent: row.optionalText(5), deviceID: row.optionalText(6))
                }
            let trail = try connection.statement("""
                SELECT kind, at, generation, ip, user_agent, device_id, json_extract(detail, '$.failure'), json_extract(detail, '$.count') FROM audit
                WHERE chain_id = ? AND kind IN (\(ChainLineage.trailKindsSQL)) ORDER BY id
                """).all([.int(id.rawValue)]) { row in
                    ChainLineage.TrailEvent(
                        kind: AuditKind(rawValue: row.text(0)), generation: row.optionalInt(2).map { Int($0) },
                        request: ChainLineage.Request(at: Instant(milliseconds: row.int(1)), ip: row.optionalText(3),
                                                      userAgent: row.optionalText(4), deviceID: row.optionalText(5)),
                        failure: row.optionalText(6), count: row.optionalInt(7).map { Int($0) } ?? 1)
                }
            return .success(ChainLineage(id: id, chain: chain, endedTokens: tokens, trail: trail))
        }
        return try result.get()
    }
}

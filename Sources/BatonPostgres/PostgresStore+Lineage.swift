import BatonCore
import BatonStorage

extension PostgresStore {
    /// The whole lineage of chain `id`, read in one snapshot and assembled by
    /// `ChainLineage(id:chain:endedTokens:trail:)` (the same for both stores).
    /// - Throws: `.chainNotFound` (never existed, or pruned).
    package func lineage(of id: ChainID) throws(BatonError) -> ChainLineage {
        let result = try snapshot { transaction throws(PostgresError) -> Result<ChainLineage, BatonError> in
            let parameter = [String(id.rawValue)]
            guard let chain = try transaction.query("""
                SELECT c.device_id, c.device_class, c.created_at, c.head_generation, c.head_issued_at, c.revoked_at,
                       c.revoked_reason, u.username, c.device_name, c.jkt
                FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = $1
                """, parameter).first.map({ row in
                    ChainLineage.ChainRow(
                        username: row.text(7), deviceID: row.text(0), deviceClass: DeviceClass(rawValue: row.text(1)) ?? .other,
                        deviceName: row[8], createdAt: row.instant(2), headGeneration: Int(row.int(3)), headIssuedAt: row.instant(4),
                        revokedAt: row.optionalInstant(5), revocation: row[6].flatMap(RevocationReason.init(rawValue:)), jkt: row[9])
                })
            else { return .failure(.chainNotFound(id)) }
            let tokens = try transaction.query("""
                SELECT generation, issued_at, ended_at, ended_by, ip, user_agent, device_id FROM tokens
                WHERE chain_id = $1 ORDER BY generation, issued_at
                """, parameter).map { row in
                    ChainLineage.endedToken(generation: Int(row.int(0)), issuedAt: row.instant(1), endedAt: row.instant(2),
                                            endedBy: row.text(3), ip: row[4], userAgent: row[5], deviceID: row[6])
                }
            let trail = try transaction.query("""
                SELECT kind, at, generation, ip, user_agent, device_id, detail::jsonb->>'failure', detail::jsonb->>'count' FROM audit
                WHERE chain_id = $1 AND kind IN (\(ChainLineage.trailKindsSQL)) ORDER BY id
                """, parameter).map { row in
                    ChainLineage.TrailEvent(
                        kind: AuditKind(rawValue: row.text(0)), generation: row.optionalInt(2).map { Int($0) },
                        request: ChainLineage.Request(at: row.instant(1), ip: row[3], userAgent: row[4], deviceID: row[5]),
                        failure: row[6], count: row[7].flatMap { Int($0) } ?? 1)
                }
            return .success(ChainLineage(id: id, chain: chain, endedTokens: tokens, trail: trail))
        }
        return try result.get()
    }
}

import BatonCore
import BatonStorage

extension TokenStore {
    /// Ended chains past the retention: revoked, or past their natural end, more than the
    /// retention ago (`?1` cutoff, `?2` max session, `?3` exchange window, all milliseconds).
    private static let endedBeforeCutoff = "(revoked_at < ?1 OR created_at + ?2 < ?1 OR head_expires_at + ?3 < ?1)"

    /// Whether chain `chains.id` has a security event.
    private static let hasSecurityEvent = "EXISTS (SELECT 1 FROM audit WHERE audit.chain_id = chains.id AND \(securityEventCondition))"

    /// SQLite's condition for the `audit` rows that are SecurityEvents.
    private static let securityEventCondition = "(kind IN (\(SecurityEvents.kindsSQL)) OR (kind = 'chain_revoked' AND "
        + "json_extract(detail, '$.reason') IN (\(SecurityEvents.revocationReasonsSQL)) "
        + "AND json_extract(detail, '$.scope') IS NOT 'all'))"

    /// Deletes chains that ended more than `retention` ago, with their lineage rows and audit
    /// events, `batchSize` chains per transaction so the write lock is never held long (other
    /// writes interleave between batches). Chains with a security event are kept unless
    /// `includeSecurityEvents`. A `dryRun` counts in one read and deletes nothing.
    package func prune(olderThan retention: Duration, includeSecurityEvents: Bool = false, dryRun: Bool = false,
                       batchSize: Int = 500) throws(BatonError) -> PruneResult {
        let keepEvidence = includeSecurityEvents ? "" : " AND NOT \(Self.hasSecurityEvent)"
        let candidates = "SELECT id FROM chains WHERE \(Self.endedBeforeCutoff)\(keepEvidence)"
        let kept = "SELECT count(*) FROM chains WHERE \(Self.endedBeforeCutoff) AND \(Self.hasSecurityEvent)"
        func bounds() -> [SQLValue] {
            [.int((clock.now() - retention).milliseconds), .int(policy.maxSession.wholeMilliseconds), .int(policy.exchangeWindow.wholeMilliseconds)]
        }
        var total = PruneResult()
        if dryRun {
            return try readConnection { connection throws(SQLiteError) in
                func count(_ sql: String) throws(SQLiteError) -> Int { Int(try connection.statement(sql).first(bounds()) { $0.int(0) } ?? 0) }
                total.chains = try count("SELECT count(*) FROM (\(candidates))")
                total.lineageRows = try count("SELECT count(*) FROM tokens WHERE chain_id IN (\(candidates))")
                total.auditEvents = try count("SELECT count(*) FROM audit WHERE chain_id IN (\(candidates))")
                total.keptChains = includeSecurityEvents ? 0 : try count(kept)
                return total
            }
        }
        while true {
            let batch = try writeConnection { connection throws(SQLiteError) -> PruneResult in
                let ids = try connection.statement(candidates + " LIMIT ?4").all(bounds() + [.int(Int64(batchSize))]) { $0.int(0) }
                var removed = PruneResult()
                for id in ids {
                    try connection.statement("DELETE FROM audit WHERE chain_id = ?").execute([.int(id)])
                    removed.auditEvents += connection.changes
                    try connection.statement("DELETE FROM tokens WHERE chain_id = ?").execute([.int(id)])
                    removed.lineageRows += connection.changes
                    try connection.statement("DELETE FROM chains WHERE id = ?").execute([.int(id)])
                    removed.chains += connection.changes
                }
                return removed
            }
            total.add(batch)
            if batch.chains < batchSize { break }
        }
        if !includeSecurityEvents {
            total.keptChains = try readConnection { connection throws(SQLiteError) in Int(try connection.statement(kept).first(bounds()) { $0.int(0) } ?? 0) }
        }
        return total
    }
}

import BatonCore
import BatonOperations
import BatonStorage

/// Pruning's SQL on SQLite. The writer runs one batch at a time, so a chain a batch selects
/// stays as selected until the batch deletes it.
extension SQLiteTransaction {
    /// Ended chains past the retention: revoked, or past their natural end, more than the
    /// retention ago (`?1` cutoff, `?2` max session, `?3` exchange window, all milliseconds).
    private static let endedBeforeCutoff = "(revoked_at < ?1 OR created_at + ?2 < ?1 OR head_expires_at + ?3 < ?1)"

    /// Whether chain `chains.id` has a security event.
    private static let hasSecurityEvent = "EXISTS (SELECT 1 FROM audit WHERE audit.chain_id = chains.id AND \(securityEventCondition))"

    /// SQLite's condition for the `audit` rows that are SecurityEvents.
    private static let securityEventCondition = "(kind IN (\(SecurityEvents.kindsSQL)) OR (kind = 'chain_revoked' AND "
        + "json_extract(detail, '$.reason') IN (\(SecurityEvents.revocationReasonsSQL)) "
        + "AND json_extract(detail, '$.scope') IS NOT 'all'))"

    private static func candidates(_ includeSecurityEvents: Bool) -> String {
        "SELECT id FROM chains WHERE \(endedBeforeCutoff)" + (includeSecurityEvents ? "" : " AND NOT \(hasSecurityEvent)")
    }

    private static let kept = "SELECT count(*) FROM chains WHERE \(endedBeforeCutoff) AND \(hasSecurityEvent)"

    private static func values(_ bounds: PruneBounds) -> [SQLValue] {
        [.int(bounds.cutoff.milliseconds), .int(bounds.maxSession.wholeMilliseconds), .int(bounds.exchangeWindow.wholeMilliseconds)]
    }

    package func pruneCounts(_ bounds: PruneBounds, includeSecurityEvents: Bool) throws(SQLiteError) -> PruneResult {
        let candidates = Self.candidates(includeSecurityEvents)
        return try connection.statement("""
            SELECT (SELECT count(*) FROM (\(candidates))),
                   (SELECT count(*) FROM tokens WHERE chain_id IN (\(candidates))),
                   (SELECT count(*) FROM audit WHERE chain_id IN (\(candidates))),
                   \(includeSecurityEvents ? "0" : "(\(Self.kept))")
            """).first(Self.values(bounds)) { row in
                var counts = PruneResult()
                counts.chains = Int(row.int(0))
                counts.lineageRows = Int(row.int(1))
                counts.auditEvents = Int(row.int(2))
                counts.keptChains = Int(row.int(3))
                return counts
            } ?? PruneResult()
    }

    package func pruneBatch(_ bounds: PruneBounds, includeSecurityEvents: Bool, limit: Int) throws(SQLiteError) -> (removed: PruneResult, selected: Int) {
        let ids = try connection.statement(Self.candidates(includeSecurityEvents) + " LIMIT ?4")
            .all(Self.values(bounds) + [.int(Int64(limit))]) { $0.int(0) }
        var removed = PruneResult()
        for id in ids {
            try connection.statement("DELETE FROM audit WHERE chain_id = ?").execute([.int(id)])
            removed.auditEvents += connection.changes
            try connection.statement("DELETE FROM tokens WHERE chain_id = ?").execute([.int(id)])
            removed.lineageRows += connection.changes
            try connection.statement("DELETE FROM chains WHERE id = ?").execute([.int(id)])
            removed.chains += connection.changes
        }
        return (removed, ids.count)
    }

    package func keptChainCount(_ bounds: PruneBounds) throws(SQLiteError) -> Int {
        Int(try connection.statement(Self.kept).first(Self.values(bounds)) { $0.int(0) } ?? 0)
    }
}

import BatonCore
import BatonOperations
import BatonStorage

/// Pruning's SQL on PostgreSQL. Several instances may prune at once: a batch locks its chains
/// with `FOR UPDATE SKIP LOCKED`, so each chain is deleted by one of them and none waits for
/// another; a chain a request holds is left for the next run. Pruning never locks a user row,
/// so it cannot deadlock with logins or operator changes.
extension Transaction {
    /// Ended chains past the retention: revoked, or past their natural end, more than the
    /// retention ago (`$1` cutoff, `$2` max session, `$3` exchange window, all milliseconds).
    private static let endedBeforeCutoff =
        "(revoked_at < $1::bigint OR created_at + $2::bigint < $1::bigint OR head_expires_at + $3::bigint < $1::bigint)"

    /// Whether chain `chains.id` has a security event (SecurityEvents), as SQLite's prune decides it.
    private static let hasSecurityEvent = """
        EXISTS (SELECT 1 FROM audit a WHERE a.chain_id = chains.id AND (a.kind IN (\(SecurityEvents.kindsSQL)) OR (a.kind = 'chain_revoked'
                AND (a.detail::jsonb ->> 'reason') IN (\(SecurityEvents.revocationReasonsSQL))
                AND (a.detail::jsonb ->> 'scope') IS DISTINCT FROM 'all')))
        """

    private static func keepEvidence(_ includeSecurityEvents: Bool) -> String {
        includeSecurityEvents ? "" : " AND NOT \(hasSecurityEvent)"
    }

    private static let kept = "SELECT count(*) FROM chains WHERE \(endedBeforeCutoff) AND \(hasSecurityEvent)"

    private static func values(_ bounds: PruneBounds) -> [String?] {
        [String(bounds.cutoff.milliseconds), String(bounds.maxSession.wholeMilliseconds), String(bounds.exchangeWindow.wholeMilliseconds)]
    }

    /// One statement, so one snapshot even in autocommit.
    package func pruneCounts(_ bounds: PruneBounds, includeSecurityEvents: Bool) throws(PostgresError) -> PruneResult {
        let candidates = "SELECT id FROM chains WHERE \(Self.endedBeforeCutoff)\(Self.keepEvidence(includeSecurityEvents))"
        let row = try query("""
            SELECT (SELECT count(*) FROM (\(candidates)) doomed),
                   (SELECT count(*) FROM tokens WHERE chain_id IN (\(candidates))),
                   (SELECT count(*) FROM audit WHERE chain_id IN (\(candidates))),
                   \(includeSecurityEvents ? "0" : "(\(Self.kept))")
            """, Self.values(bounds)).first ?? []
        var counts = PruneResult()
        guard row.count == 4 else { return counts }
        counts.chains = Int(row.int(0))
        counts.lineageRows = Int(row.int(1))
        counts.auditEvents = Int(row.int(2))
        counts.keptChains = Int(row.int(3))
        return counts
    }

    package func pruneBatch(_ bounds: PruneBounds, includeSecurityEvents: Bool, limit: Int) throws(PostgresError) -> (removed: PruneResult, selected: Int) {
        let locked = try query(
            "SELECT id FROM chains WHERE \(Self.endedBeforeCutoff)\(Self.keepEvidence(includeSecurityEvents)) ORDER BY id LIMIT $4::bigint FOR UPDATE SKIP LOCKED",
            Self.values(bounds) + [String(limit)]
        ).map { $0.int(0) }
        guard !locked.isEmpty else { return (PruneResult(), 0) }
        // Decided again now that the rows are locked: every event about a chain is written under its
        // row lock, so none can appear for these chains until this commits.
        let doomed = includeSecurityEvents ? locked : try query(
            "SELECT id FROM chains WHERE id = ANY($1::bigint[])\(Self.keepEvidence(false))", [bigintArray(locked)]).map { $0.int(0) }
        func delete(_ table: String, _ column: String) throws(PostgresError) -> Int {
            Int(try query(
                "WITH gone AS (DELETE FROM \(table) WHERE \(column) = ANY($1::bigint[]) RETURNING 1) SELECT count(*) FROM gone",
                [bigintArray(doomed)]).first?.int(0) ?? 0)
        }
        var removed = PruneResult()
        removed.auditEvents = try delete("audit", "chain_id")
        removed.lineageRows = try delete("tokens", "chain_id")
        removed.chains = try delete("chains", "id")
        return (removed, locked.count)
    }

    package func keptChainCount(_ bounds: PruneBounds) throws(PostgresError) -> Int {
        Int(try query(Self.kept, Self.values(bounds)).first?.int(0) ?? 0)
    }
}

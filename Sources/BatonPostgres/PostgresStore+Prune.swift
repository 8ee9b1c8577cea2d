import BatonCore
import BatonStorage

extension PostgresStore {
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

    /// Deletes chains that ended more than `retention` ago, with their lineage rows and audit
    /// events, `batchSize` chains per transaction. Chains with a security event are kept unless
    /// `includeSecurityEvents`. A `dryRun` counts in one snapshot and deletes nothing.
    ///
    /// Several instances may prune at once (`serve --prune-every` on each): a batch locks its
    /// chains with `FOR UPDATE SKIP LOCKED`, so each chain is deleted by one of them and none
    /// waits for another; a chain a request holds is left for the next run. Prune never
    /// locks a user row, so it cannot deadlock with logins or operator changes.
    package func prune(olderThan retention: Duration, includeSecurityEvents: Bool = false, dryRun: Bool = false,
                       batchSize: Int = 500) throws(BatonError) -> PruneResult {
        let keepEvidence = includeSecurityEvents ? "" : " AND NOT \(Self.hasSecurityEvent)"
        let candidates = "SELECT id FROM chains WHERE \(Self.endedBeforeCutoff)\(keepEvidence)"
        let kept = "SELECT count(*) FROM chains WHERE \(Self.endedBeforeCutoff) AND \(Self.hasSecurityEvent)"
        func bounds() -> [String?] {
            [String((clock.now() - retention).milliseconds), String(policy.maxSession.wholeMilliseconds), String(policy.exchangeWindow.wholeMilliseconds)]
        }
        var total = PruneResult()
        if dryRun {
            return try snapshot { transaction throws(PostgresError) in
                let parameters = bounds()
                func count(_ sql: String) throws(PostgresError) -> Int { Int(try transaction.query(sql, parameters).first?.int(0) ?? 0) }
                total.chains = try count("SELECT count(*) FROM (\(candidates)) doomed")
                total.lineageRows = try count("SELECT count(*) FROM tokens WHERE chain_id IN (\(candidates))")
                total.auditEvents = try count("SELECT count(*) FROM audit WHERE chain_id IN (\(candidates))")
                total.keptChains = includeSecurityEvents ? 0 : try count(kept)
                return total
            }
        }
        while true {
            let batch = try transaction { transaction throws(PostgresError) -> (removed: PruneResult, selected: Int) in
                let locked = try transaction.query(candidates + " ORDER BY id LIMIT $4::bigint FOR UPDATE SKIP LOCKED", bounds() + [String(batchSize)])
                    .map { $0.int(0) }
                guard !locked.isEmpty else { return (PruneResult(), 0) }
                // Decided again now that the rows are locked: every event about a chain is written
                // under its row lock, so none can appear for these chains until this commits.
                let doomed = includeSecurityEvents ? locked : try transaction.query(
                    "SELECT id FROM chains WHERE id = ANY($1::bigint[])\(keepEvidence)", [bigintArray(locked)]).map { $0.int(0) }
                func delete(_ table: String, _ column: String) throws(PostgresError) -> Int {
                    Int(try transaction.query(
                        "WITH gone AS (DELETE FROM \(table) WHERE \(column) = ANY($1::bigint[]) RETURNING 1) SELECT count(*) FROM gone",
                        [bigintArray(doomed)]).first?.int(0) ?? 0)
                }
                var removed = PruneResult()
                removed.auditEvents = try delete("audit", "chain_id")
                removed.lineageRows = try delete("tokens", "chain_id")
                removed.chains = try delete("chains", "id")
                return (removed, locked.count)
            }
            total.add(batch.removed)
            if batch.selected < batchSize { break }
        }
        if !includeSecurityEvents {
            total.keptChains = try read { transaction throws(PostgresError) in Int(try transaction.query(kept, bounds()).first?.int(0) ?? 0) }
        }
        return total
    }
}

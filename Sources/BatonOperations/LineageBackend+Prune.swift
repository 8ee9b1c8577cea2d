import BatonCore
import BatonStorage

extension LineageBackend {
    /// Deletes chains that ended more than `retention` ago, with their lineage rows and audit
    /// events, `batchSize` chains per transaction so no write waits long behind it. Chains with a
    /// security event (SecurityEvents) are kept unless `includeSecurityEvents`. A `dryRun`
    /// counts in one snapshot and deletes nothing. Several processes may prune at once
    /// (`serve --prune-every` on each instance): each chain is deleted by one of them.
    package func prune(olderThan retention: Duration, includeSecurityEvents: Bool = false, dryRun: Bool = false,
                       batchSize: Int = 500) throws(BatonError) -> PruneResult {
        func bounds() -> PruneBounds {
            PruneBounds(cutoff: clock.now() - retention, maxSession: policy.maxSession, exchangeWindow: policy.exchangeWindow)
        }
        if dryRun {
            return try read { transaction throws(Transaction.Failure) in
                try transaction.pruneCounts(bounds(), includeSecurityEvents: includeSecurityEvents)
            }
        }
        var total = PruneResult()
        while true {
            let bounds = bounds()
            let batch = try write { transaction throws(Transaction.Failure) in
                try transaction.pruneBatch(bounds, includeSecurityEvents: includeSecurityEvents, limit: batchSize)
            }
            total.add(batch.removed)
            if batch.selected < batchSize { break }
        }
        if !includeSecurityEvents {
            total.keptChains = try read { transaction throws(Transaction.Failure) in try transaction.keptChainCount(bounds()) }
        }
        return total
    }
}

import BatonCore
import BatonStorage

extension LineageBackend {
    /// Revokes one chain (`admin`, with the operator's `note`), taking its user's row lock
    /// before the chain's, as every operation that locks both does.
    /// - Returns: false when it was already revoked.
    /// - Throws: `.chainNotFound`.
    package func revokeChain(_ id: ChainID, note: String? = nil, context: RequestContext = .admin) throws(BatonError) -> Bool {
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<Bool, BatonError> in
            // A chain's user never changes, so reading it unlocked first is safe.
            guard let owner = try transaction.chain(id, forUpdate: false)?.head.userID else { return .failure(.chainNotFound(id)) }
            try transaction.lockUser(owner)
            guard let record = try transaction.chain(id, forUpdate: true) else { return .failure(.chainNotFound(id)) }
            return .success(try revoke(record.head, username: record.username, reason: .admin, note: note, context: context,
                                       now: clock.now(), in: transaction))
        }
        return try result.get()
    }

    /// How many chains `revokeAllChains` would revoke now: every chain not yet revoked,
    /// whether or not it has expired by this process's policy.
    package func unrevokedChainCount() throws(BatonError) -> Int {
        try read { transaction throws(Transaction.Failure) in try transaction.unrevokedChainCount() }
    }

    /// Revokes every chain not yet revoked that existed when the call started (`admin`, with
    /// `note` and `scope: all` in each `chain_revoked` event), `batchSize` chains per
    /// transaction so requests interleave. The events do not make the chains evidence for
    /// pruning (SecurityEvents).
    ///
    /// Expired chains are revoked too: this process may not know the server's lifetimes
    /// (`--max-session`, `--exchange-window`), and after a restore from a backup a chain it
    /// thinks ended may still be exchangeable for the server. Each batch locks the users of
    /// its chains first, then the chains (in id order): the lock order of every operation.
    /// - Returns: the number of chains revoked.
    package func revokeAllChains(note: String?, context: RequestContext = .admin, batchSize: Int = 500) throws(BatonError) -> Int {
        let started = clock.now()
        var total = 0
        while true {
            let batch = try write { [self] transaction throws(Transaction.Failure) -> (revoked: Int, isLast: Bool) in
                let ids = try transaction.unrevokedChainIDs(createdBy: started, limit: batchSize)
                try transaction.lockUsers(owning: ids)
                let now = clock.now()
                var count = 0
                for id in ids {
                    guard let record = try transaction.chain(id, forUpdate: true) else { continue }
                    if try revoke(record.head, username: record.username, reason: .admin, note: note, isBulk: true, context: context,
                                  now: now, in: transaction) {
                        count += 1
                    }
                }
                return (count, ids.count < batchSize)
            }
            total += batch.revoked
            if batch.isLast { return total }
        }
    }
}

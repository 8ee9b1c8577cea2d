import BatonCore
import BatonStorage

extension PostgresStore {
    /// How many chains `revokeAllChains` would revoke now: every chain not yet revoked,
    /// whether or not it has expired by this process's policy.
    package func unrevokedChainCount() throws(BatonError) -> Int {
        try read { transaction throws(PostgresError) in
            Int(try transaction.query("SELECT count(*) FROM chains WHERE revoked_at IS NULL").first?.int(0) ?? 0)
        }
    }

    /// Revokes every chain not yet revoked that existed when the call started (`admin`, with
    /// `note` and `scope: all` in each `chain_revoked` event, as SQLite's `revokeAllChains`),
    /// `batchSize` chains per transaction so requests interleave.
    ///
    /// Each batch locks the users of its chains first (in id order), then the chains (in id
    /// order): the order login and the operator's user commands take, so none of them deadlocks.
    /// - Returns: the number of chains revoked.
    package func revokeAllChains(note: String?, context: RequestContext = .admin, batchSize: Int = 500) throws(BatonError) -> Int {
        let started = clock.now()
        var total = 0
        while true {
            let batch = try transaction { [self] transaction throws(PostgresError) -> (revoked: Int, isLast: Bool) in
                let ids = try transaction.query(
                    "SELECT id FROM chains WHERE revoked_at IS NULL AND created_at <= $1 ORDER BY id LIMIT $2",
                    [String(started.milliseconds), String(batchSize)]
                ).map { $0.int(0) }
                try transaction.query(
                    "SELECT id FROM users WHERE id IN (SELECT user_id FROM chains WHERE id = ANY($1::bigint[])) ORDER BY id FOR UPDATE",
                    [bigintArray(ids)])
                let now = clock.now()
                var count = 0
                for id in ids {
                    guard let row = try ChainRow.load(ChainID(rawValue: id), locking: true, in: transaction) else { continue }
                    if try revoke(row.head, username: row.username, reason: .admin, note: note, isBulk: true, context: context, now: now, in: transaction) {
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

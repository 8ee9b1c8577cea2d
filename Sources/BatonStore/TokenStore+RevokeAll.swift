import BatonCore
import BatonStorage

extension TokenStore {
    /// How many chains `revokeAllChains` would revoke now: every chain not yet revoked,
    /// whether or not it has expired by this process's policy.
    package func unrevokedChainCount() throws(BatonError) -> Int {
        try read { connection throws(SQLiteError) in
            Int(try connection.statement("SELECT count(*) FROM chains WHERE revoked_at IS NULL").first { $0.int(0) } ?? 0)
        }
    }

    /// Revokes every chain not yet revoked (`admin`, with `note` and `scope: all` in each
    /// `chain_revoked` event), `batchSize` chains per transaction so the server's writes
    /// interleave. The events do not make the chains evidence for pruning (SecurityEvents).
    ///
    /// Expired chains are revoked too: this process may not know the server's lifetimes
    /// (`--max-session`, `--exchange-window`), and after a restore from a backup a chain it
    /// thinks ended may still be exchangeable for the server. Chains created after the call
    /// started (logins meanwhile) are left alone.
    /// - Returns: the number of chains revoked.
    package func revokeAllChains(note: String?, context: RequestContext = adminContext, batchSize: Int = 500) throws(BatonError) -> Int {
        let started = clock.now()
        var total = 0
        while true {
            let batch = try write { [self] connection throws(SQLiteError) -> (revoked: Int, isLast: Bool) in
                let now = clock.now()
                let ids = try connection.statement(
                    "SELECT id FROM chains WHERE revoked_at IS NULL AND created_at <= ? ORDER BY id LIMIT ?"
                ).all([.int(started.milliseconds), .int(Int64(batchSize))]) { ChainID(rawValue: $0.int(0)) }
                var count = 0
                for id in ids {
                    guard let record = try ChainRecord.load(id, on: connection) else { continue }
                    if try revoke(record.head, username: record.username, reason: .admin, note: note, isBulk: true, context: context,
                                      now: now, on: connection) {
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

import BatonCore
import BatonStorage

/// The token key ring (docs/admin.md, "Rotating the token key"): reading it into this
/// process's `KeyRingCache`, and `baton admin key rotate`, `list` and `retire`.
extension LineageBackend {
    /// Reads the ring from the database into `keyRing` now (the stores call it as they open,
    /// and after a rotation or a retirement) and starts its watcher (`KeyRingCache`).
    /// - Throws: `.unavailable` when the database cannot be read or a key does not unwrap.
    package func loadKeyRing() throws(BatonError) {
        guard let keyRing else { return }
        let rows = try read { transaction throws(Transaction.Failure) in try ringRows(keyRing, transaction) }
        try keyRing.reload(wallNow: clock.now()) { rows }
        keyRing.startWatching { [weak self] in self?.readKeyRing() != nil }
    }

    /// The watcher's read: a failure keeps the copy this process has (the next read tries again).
    private func readKeyRing() {
        guard let keyRing else { return }
        try? keyRing.reload(wallNow: clock.now()) {
            try? read { transaction throws(Transaction.Failure) in try ringRows(keyRing, transaction) }
        }
    }

    /// Stops the key ring's watcher (the stores call it as they close).
    package func stopKeyRingWatch() { keyRing?.stopWatching() }

    /// The ring's rows; before the first rotation, row 0 as it will be written (the key file's
    /// key, created when the database recorded its fingerprint), so the key's age is known.
    private func ringRows(_ keyRing: KeyRingCache, _ transaction: Transaction) throws(Transaction.Failure) -> [TokenKeyRow] {
        let rows = try transaction.tokenKeys()
        guard rows.isEmpty, let recorded = try transaction.recordedKeyTime() else { return rows }
        return [TokenKeyRow(id: 0, wrapped: nil, fingerprint: keyRing.fileKey.fingerprint, createdAt: recorded)]
    }

    /// The key ring's lines of `/metrics`: the minting key's age (what `BatonTokenKeyOld`
    /// watches, deploy/prometheus/baton-rules.yml); nothing for a store opened without a key.
    package func keyRingMetricsText() -> String {
        guard let keyRing, let createdAt = keyRing.mintingKeyCreatedAt else { return "" }
        let age = max(0, clock.now().milliseconds - createdAt.milliseconds) / 1000
        return "# HELP baton_token_key_age_seconds Age of the token key new tokens are made with (this process's copy of the ring).\n"
            + "# TYPE baton_token_key_age_seconds gauge\nbaton_token_key_age_seconds \(age)\n"
            + "# HELP baton_token_key_ring_reads_total Reads of the token key ring from the database by this process (its watcher's, and after each rotation or retirement).\n"
            + "# TYPE baton_token_key_ring_reads_total counter\nbaton_token_key_ring_reads_total \(keyRing.reads)\n"
    }

    /// The codec to make tokens with (`KeyRingCache.mintingCodec`): never a database read.
    func mintingCodec() -> TokenCodec {
        guard let keyRing else { preconditionFailure("token operation on a store opened without a key") }
        return keyRing.mintingCodec
    }

    /// `KeyRingStore.rotateKey`: a new random key, wrapped under the key file's key, as the
    /// ring's newest (row 0 for the key file's own key written first, at the first rotation).
    package func rotateKey(context: RequestContext) throws(BatonError) -> TokenKeyRow {
        guard let keyRing else { preconditionFailure("key rotation on a store opened without a key") }
        let fresh = TokenKey.generate()
        let row = try write { [clock] transaction throws(Transaction.Failure) -> TokenKeyRow in
            let now = clock.now()
            let rows = try transaction.tokenKeys()
            if !rows.contains(where: { $0.id == 0 }) {
                try transaction.insertTokenKey(TokenKeyRow(id: 0, wrapped: nil, fingerprint: keyRing.fileKey.fingerprint,
                                                           createdAt: try transaction.recordedKeyTime() ?? now))
            }
            let id = (rows.map(\.id).max() ?? 0) + 1
            let row = TokenKeyRow(id: id, wrapped: KeyWrap.wrap(fresh, id: id, under: keyRing.fileKey), fingerprint: fresh.fingerprint, createdAt: now)
            try transaction.insertTokenKey(row)
            try transaction.record(.keyRotated(row, context: context), at: now)
            return row
        }
        try loadKeyRing()
        return row
    }

    /// `KeyRingStore.keyStatuses`: before the first rotation, key 0 alone (the key file's).
    package func keyStatuses() throws(BatonError) -> [TokenKeyStatus] {
        guard let keyRing else { preconditionFailure("key list on a store opened without a key") }
        let bounds = liveBounds(now: clock.now())
        return try read { transaction throws(Transaction.Failure) -> [TokenKeyStatus] in
            var rows = try transaction.tokenKeys()
            if rows.isEmpty {
                rows = [TokenKeyRow(id: 0, wrapped: nil, fingerprint: keyRing.fileKey.fingerprint,
                                    createdAt: try transaction.recordedKeyTime() ?? clock.now())]
            }
            let counts = try transaction.liveChainCounts(bounds)
            let minting = rows.filter { $0.retiredAt == nil }.map(\.id).max()
            return rows.map { TokenKeyStatus(row: $0, liveChains: counts[$0.id] ?? 0, isMinting: $0.id == minting) }
        }
    }

    /// `KeyRingStore.retireKey`, in one transaction: the refusals first, then the revocations
    /// (`key_retired`, each audited and reported like every revocation), the row, the audit.
    package func retireKey(_ id: UInt32, force: Bool, context: RequestContext) throws(BatonError) -> [ChainID] {
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<[ChainID], BatonError> in
            let now = clock.now()
            let rows = try transaction.tokenKeys()
            guard let row = rows.first(where: { $0.id == id }) else {
                return .failure(.invalidArgument(rows.isEmpty && id == 0
                    ? "key 0 (the key file's) is the only token key and makes every new token; run 'baton admin key rotate' first"
                    : "there is no token key \(id); see 'baton admin key list'"))
            }
            if let retired = row.retiredAt { return .failure(.invalidArgument("token key \(id) was retired at \(retired.rfc3339) already")) }
            let successor = rows.filter { $0.id > id }.map(\.createdAt).min()
            guard let successor else {
                return .failure(.invalidArgument("token key \(id) makes every new token; run 'baton admin key rotate' first"))
            }
            // Live chains first: the refusal an operator can act on (wait, or --force).
            let live = try transaction.liveChainIDs(ofKey: id, liveBounds(now: now))
            if !live.isEmpty && !force {
                return .failure(.invalidArgument(
                    "\(live.count == 1 ? "1 live chain holds" : "\(live.count) live chains hold") a token of key \(id); each moves to the newest key at its next exchange. Retry later (see 'baton admin key list'), or retire with --force to revoke them (reason key_retired: their users log in again)"))
            }
            let ready = successor + KeyRingCache.retireAfter
            guard now >= ready else {
                return .failure(.invalidArgument(
                    "token key \(id) was superseded less than \(KeyRingCache.retireAfter.components.seconds) seconds ago, and an instance may still make tokens with it; retry after \(ready.rfc3339)"))
            }
            try transaction.lockUsers(owning: live)  // PostgreSQL's lock order: users before chains
            var revoked: [ChainID] = []
            for chainID in live {
                guard let record = try transaction.chain(chainID, forUpdate: true) else { continue }
                if try revoke(record.head, username: record.username, reason: .keyRetired, context: context, now: now, in: transaction) {
                    revoked.append(chainID)
                }
            }
            try transaction.retireTokenKey(id, now: now)
            try transaction.record(.keyRetired(row, revoked: revoked.count, context: context), at: now)
            return .success(revoked)
        }
        let revoked = try result.get()
        try loadKeyRing()
        return revoked
    }

    /// The natural ends of chains as of `now` under this store's policy: a chain past them
    /// holds nothing a key must keep verifying.
    private func liveBounds(now: Instant) -> PruneBounds {
        PruneBounds(cutoff: now, maxSession: policy.maxSession, exchangeWindow: policy.exchangeWindow)
    }
}

import BatonCore
import BatonStorage
import BatonSync
import Glibc

/// The lineage store on PostgreSQL: the same operations and rules as the SQLite store, for
/// several Baton instances sharing one (replicated) database.
///
/// Every decision about a chain runs in one transaction that first locks the chain's row
/// (`SELECT … FOR UPDATE`), so exchanges of one chain are serialized by the database, whichever
/// instance receives them. An answer is given only after COMMIT returned, which with
/// `synchronous_commit` at its default (`on`) and a synchronous standby configured means the
/// standby has the commit too. Any storage failure (server down, failover, timeout) answers
/// `unavailable` (503); broken connections are dropped and the next request connects anew.
package final class PostgresStore: LineageStore {
    /// Pool size, time bounds and password hashing.
    package struct Options: Sendable {
        /// Connections to the database at most (per Baton instance).
        package var poolSize = 16
        /// The longest a statement or a lock wait may take (`statement_timeout`, `lock_timeout`),
        /// and the longest a request waits for a free connection.
        package var statementTimeout: Duration = .seconds(5)
        /// argon2id cost.
        package var hashParameters = PasswordHasher.Parameters()
        /// Password hashes allowed to run at once; default: half the cores.
        package var hashConcurrency = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) / 2)
        /// Create Baton's tables in a database that has none (`serve`, `admin user add`);
        /// otherwise such a database is refused (`noSchema`), as the SQLite store refuses a
        /// missing file, so a mistyped database name is not filled with tables.
        package var createSchema = true
        /// The key file the key came from, for messages and the audit.
        package var keyFilePath = "(key file)"
        /// `serve --new-key`: a key other than the one the database records replaces it
        /// (audited) instead of being refused.
        package var replacesRecordedKey = false
        package init() {}
    }

    /// The database, as shown to people: the URI without its password.
    package let address: String
    /// The lifetimes and device rules in force.
    package let policy: Policy
    let clock: any WallClock
    let codec: TokenCodec?
    let pool: ConnectionPool
    let hasher: PasswordHasher
    let throttle = Locked(LoginThrottle())
    let stepUps = StepUpGuard()
    private let totals = Locked(CommittedTotals())

    /// Connects to `uri`, creating the schema in a database that has none.
    /// - Parameter key: the MAC key every instance shares; nil for the admin CLI (no tokens).
    /// - Throws: `PostgresStoreError` naming the address (never the password).
    package init(uri: String, key: TokenKey?, policy: Policy = Policy(), clock: any WallClock = SystemClock(), options: Options = Options()) throws(PostgresStoreError) {
        self.address = PostgresURI.redacted(uri)
        self.policy = policy
        self.clock = clock
        self.codec = key.map(TokenCodec.init(key:))
        self.pool = ConnectionPool(uri: uri, size: options.poolSize, statementTimeout: options.statementTimeout, waitTimeout: options.statementTimeout)
        self.hasher = PasswordHasher(parameters: options.hashParameters, concurrency: options.hashConcurrency)
        let found: Int64?
        do {
            found = try pool.withConnection { connection throws(PostgresError) in try PostgresSchema.prepare(connection, create: options.createSchema) }
        } catch {
            pool.close()
            throw .unreachable(address: address, error)
        }
        guard let found else {
            pool.close()
            throw .noSchema(address: address)
        }
        guard found == PostgresSchema.version else {
            pool.close()
            throw .unknownSchemaVersion(address: address, found: found)
        }
        if let key {
            do throws(PostgresStoreError) { try adoptKey(key, keyPath: options.keyFilePath, replacing: options.replacesRecordedKey) } catch {
                pool.close()
                throw error
            }
        }
    }

    /// Checks `key` against the fingerprint the database records (`KeyCheck`), in one
    /// transaction under the schema's advisory lock, so instances starting together decide one
    /// after the other: the first records its key, and one with another key is refused.
    /// - Throws: `.keyMismatch`; `.unreachable`.
    private func adoptKey(_ key: TokenKey, keyPath: String, replacing: Bool) throws(PostgresStoreError) {
        let presented = key.fingerprint
        let decision: KeyCheck
        do {
            decision = try transaction { [clock] transaction throws(PostgresError) -> KeyCheck in
                try transaction.query("SELECT pg_advisory_xact_lock($1)", [String(PostgresSchema.lockKey)])
                let recorded = try transaction.query("SELECT fingerprint FROM key_fingerprint WHERE id = 1").first?[0] ?? nil
                let decision = KeyCheck.decide(recorded: recorded, presented: presented, replacing: replacing)
                let now = clock.now()
                switch decision {
                case .matches, .refuse:
                    break
                case .record:
                    try transaction.query("INSERT INTO key_fingerprint (id, fingerprint, recorded_at) VALUES (1, $1, $2)", [presented, String(now.milliseconds)])
                    let inUse = try transaction.query("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM chains)").first?[0] == "t"
                    if inUse { try transaction.append(.keyRecorded(fingerprint: presented, keyFile: keyPath), at: now) }
                case .replace(let previous):
                    try transaction.query("UPDATE key_fingerprint SET fingerprint = $1, recorded_at = $2 WHERE id = 1", [presented, String(now.milliseconds)])
                    try transaction.append(.keyReplaced(previous: previous, fingerprint: presented, keyFile: keyPath), at: now)
                }
                return decision
            }
        } catch {
            throw .unreachable(address: address, PostgresError(message: error.message))
        }
        if case .refuse(let recorded) = decision {
            throw .keyMismatch(keyPath: keyPath, address: address, recorded: recorded, presented: presented)
        }
    }

    /// Closes every idle connection; later calls fail with `.unavailable`.
    package func close() { pool.close() }

    package var committedTotals: CommittedTotals { totals.withLock { $0 } }

    /// The pool's counters in Prometheus text.
    package func storageMetricsText() -> String {
        let stats = pool.statistics
        return """
            # HELP baton_postgres_connections Open connections of this instance's pool.
            # TYPE baton_postgres_connections gauge
            baton_postgres_connections \(stats.open)
            # HELP baton_postgres_connects_total Connection attempts, by outcome.
            # TYPE baton_postgres_connects_total counter
            baton_postgres_connects_total{outcome="succeeded"} \(stats.connects)
            baton_postgres_connects_total{outcome="failed"} \(stats.connectFailures)
            # HELP baton_postgres_connections_dropped_total Connections found broken and closed.
            # TYPE baton_postgres_connections_dropped_total counter
            baton_postgres_connections_dropped_total \(stats.dropped)

            """
    }

    /// Whether a write can commit now (`/readyz`): a transaction that writes (and so needs a
    /// primary and, with synchronous replication, the standby's acknowledgement).
    package func isWritable() -> Bool {
        (try? transaction { transaction throws(PostgresError) in
            try transaction.query("UPDATE baton_schema SET version = version")
        }) != nil
    }

    package func chainID(ofToken token: String) -> ChainID? { codec?.authenticate(token)?.chainID }

    // MARK: - Plumbing shared by the operations

    /// Runs `body` in a transaction and commits; storage failures become `.unavailable`.
    func transaction<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        let committed: (T, [AuditEvent])
        do throws(PostgresError) {
            committed = try pool.withConnection { connection throws(PostgresError) -> (T, [AuditEvent]) in
                try connection.execute("BEGIN")
                let transaction = Transaction(connection)
                do throws(PostgresError) {
                    let value = try body(transaction)
                    if transaction.isRollbackOnly {
                        try connection.execute("ROLLBACK")
                        return (value, [])
                    }
                    _ = connection.takeWarnings()
                    try connection.execute("COMMIT")
                    // A warning on COMMIT: "canceling wait for synchronous replication", when the
                    // standby did not confirm in time and the connection cancelled the wait
                    // (PostgresConnection.answer(to:)). The commit is local only and could be lost
                    // in a failover, so it is not acknowledged: 503, and the client retries (R3a).
                    guard connection.takeWarnings() == 0 else {
                        throw PostgresError(message: "the commit was not confirmed by the synchronous standby in time")
                    }
                    return (value, transaction.events)
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
            }
        } catch {
            throw .unavailable("PostgreSQL at \(address): \(error.message)")
        }
        if !committed.1.isEmpty { totals.withLock { totals in for event in committed.1 { totals.count(event) } } }
        return committed.0
    }

    /// Runs `body`'s statements each on its own (autocommit, no BEGIN/COMMIT round trips): for
    /// reads, and single-statement writes; storage failures become `.unavailable`. A write's
    /// implicit commit waits for the synchronous standby as COMMIT does: one the standby did not
    /// confirm (its WARNING) is not acknowledged either.
    func read<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        do throws(PostgresError) {
            return try pool.withConnection { connection throws(PostgresError) -> T in
                _ = connection.takeWarnings()
                let value = try body(Transaction(connection))
                guard connection.takeWarnings() == 0 else {
                    throw PostgresError(message: "a write was not confirmed by the synchronous standby in time")
                }
                return value
            }
        } catch {
            throw .unavailable("PostgreSQL at \(address): \(error.message)")
        }
    }

    /// The token's claims if its MAC verifies.
    func authenticate(_ token: String) -> PresentedToken? {
        guard let codec else { preconditionFailure("token operation on a store opened without a key") }
        return codec.authenticate(token)
    }

    /// Writes `issued` to the chain row as its new head.
    func installHead(_ issued: IssuedToken, of chain: ChainHead, now: Instant, in transaction: Transaction) throws(PostgresError) -> TokenBundle {
        precondition(issued.chainID == chain.id)
        let expiresAt = min(now + policy.tokenTTL, chain.sessionEnd(policy))
        try transaction.query("""
            UPDATE chains SET head_generation = $1, head_hash = $2, head_issued_at = $3, head_expires_at = $4,
                              head_presented = false, last_exchange_at = $5
            WHERE id = $6
            """, [String(issued.generation), ByteaText.encode(issued.hash.bytes), String(now.milliseconds), String(expiresAt.milliseconds),
                  String(now.milliseconds), String(chain.id.rawValue)])
        return bundle(issued, chain: chain, expiresAt: expiresAt, now: now)
    }

    /// The bundle for a freshly issued head.
    func bundle(_ issued: IssuedToken, chain: ChainHead, expiresAt: Instant, now: Instant) -> TokenBundle {
        TokenBundle(issued: issued, chain: chain, expiresAt: expiresAt, now: now, policy: policy)
    }

    /// Revokes `chain` (if not already) and writes its `chain_revoked` event, with the
    /// operator's `note` and, for `revoke --all` (`isBulk`), `scope: all`, as SQLite does.
    /// - Returns: whether this call revoked it.
    @discardableResult
    func revoke(
        _ chain: ChainHead, username: String?, reason: RevocationReason, note: String? = nil, isBulk: Bool = false, context: RequestContext,
        now: Instant, in transaction: Transaction
    ) throws(PostgresError) -> Bool {
        let updated = try transaction.query(
            "UPDATE chains SET revoked_at = $1, revoked_reason = $2 WHERE id = $3 AND revoked_at IS NULL RETURNING id",
            [String(now.milliseconds), reason.rawValue, String(chain.id.rawValue)])
        guard !updated.isEmpty else { return false }
        try transaction.append(.chainRevoked(chain, username: username, reason: reason, note: note, isBulk: isBulk, context: context), at: now)
        return true
    }

    /// R4: audit fork_detected and revoke the chain.
    func recordFork(_ presented: PresentedToken, _ row: ChainRow, context: RequestContext, now: Instant, in transaction: Transaction) throws(PostgresError) {
        let chain = row.head
        try transaction.append(
            AuditEvent(kind: .forkDetected, userID: chain.userID, username: row.username, chainID: chain.id,
                       generation: presented.generation, context: context,
                       detail: ["presented_generation": .int(Int64(presented.generation)),
                                "head_generation": .int(Int64(chain.generation)),
                                "chain_device_id": .string(chain.deviceID)]),
            at: now)
        try revoke(chain, username: row.username, reason: .forkDetected, context: context, now: now, in: transaction)
    }

    /// Takes the user's row lock. Whatever locks several rows of one user takes this first,
    /// then chain rows: one lock order for every operation, so none waits on another in a cycle.
    func lockUser(_ userID: Int64, in transaction: Transaction) throws(PostgresError) {
        try transaction.query("SELECT id FROM users WHERE id = $1 FOR UPDATE", [String(userID)])
    }

    /// The user's live chains, oldest first, each locked (the user's row locked before).
    func liveChains(ofUser userID: Int64, now: Instant, in transaction: Transaction) throws(PostgresError) -> [ChainHead] {
        try unrevokedChains(ofUser: userID, in: transaction).filter { $0.isLive(at: now, policy) }
    }

    /// Every chain of the user not yet revoked, oldest first and row-locked, whether or not it
    /// has expired by this process's policy: what a user-wide revocation ends.
    func unrevokedChains(ofUser userID: Int64, in transaction: Transaction) throws(PostgresError) -> [ChainHead] {
        let ids = try transaction.query(
            "SELECT id FROM chains WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at, id", [String(userID)]
        ).compactMap { $0[0].flatMap(Int64.init).map(ChainID.init(rawValue:)) }
        var chains: [ChainHead] = []
        for id in ids { if let row = try ChainRow.load(id, locking: true, in: transaction) { chains.append(row.head) } }
        return chains
    }
}

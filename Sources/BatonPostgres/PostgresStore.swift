import BatonCore
import BatonOperations
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
    package let clock: any WallClock
    /// The token key ring as this process last read it; nil for the admin CLI (no tokens).
    package let keyRing: KeyRingCache?
    let pool: ConnectionPool
    package let hasher: PasswordHasher
    package let limits = AttemptLimits()
    private let totals = Locked(CommittedTotals())
    private let commitObserver = Locked<(@Sendable ([AuditEvent]) -> Void)?>(nil)

    /// Connects to `uri`, creating the schema in a database that has none.
    /// - Parameter key: the MAC key every instance shares; nil for the admin CLI (no tokens).
    /// - Throws: `PostgresStoreError` naming the address (never the password).
    package init(uri: String, key: TokenKey?, policy: Policy = Policy(), clock: any WallClock = SystemClock(), options: Options = Options()) throws(PostgresStoreError) {
        self.address = PostgresURI.redacted(uri)
        self.policy = policy
        self.clock = clock
        self.keyRing = key.map(KeyRingCache.init(fileKey:))
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
            do throws(BatonError) { try loadKeyRing() } catch {
                pool.close()
                throw .unreachable(address: address, PostgresError(message: error.detail))
            }
        }
    }

    /// Checks `key` against the fingerprint the database records (`KeyAdoption`), in one
    /// transaction under the schema's advisory lock, so instances starting together decide one
    /// after the other: the first records its key, and one with another key is refused.
    /// - Throws: `.keyMismatch`; `.unreachable`.
    private func adoptKey(_ key: TokenKey, keyPath: String, replacing: Bool) throws(PostgresStoreError) {
        let presented = key.fingerprint
        let decision: KeyCheck
        do {
            decision = try transaction { [clock] transaction throws(PostgresError) -> KeyCheck in
                try transaction.query("SELECT pg_advisory_xact_lock($1)", [String(PostgresSchema.lockKey)])
                return try KeyAdoption.adopt(key, keyPath: keyPath, replacing: replacing, now: clock.now(), in: transaction)
            }
        } catch {
            throw .unreachable(address: address, PostgresError(message: error.message))
        }
        if case .refuse(let recorded) = decision {
            throw .keyMismatch(keyPath: keyPath, address: address, recorded: recorded, presented: presented)
        }
    }

    /// Closes every idle connection; later calls fail with `.unavailable`.
    package func close() {
        drainProofFailures()  // the counts of open windows of refused proofs, while the pool is open
        pool.close()
    }

    package var committedTotals: CommittedTotals { totals.withLock { $0 } }

    package func observeCommits(_ observer: @escaping @Sendable ([AuditEvent]) -> Void) {
        commitObserver.withLock { $0 = observer }
    }

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

            """ + keyRingMetricsText()
    }

    /// Whether a write can commit now (`/readyz`): a transaction that writes (and so needs a
    /// primary and, with synchronous replication, the standby's acknowledgement).
    package func isWritable() -> Bool {
        (try? transaction { transaction throws(PostgresError) in
            try transaction.query("UPDATE baton_schema SET version = version")
        }) != nil
    }

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
                    try transaction.writeOutbox()
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
        if !committed.1.isEmpty {
            totals.withLock { totals in for event in committed.1 { totals.count(event) } }
            commitObserver.withLock { $0 }?(committed.1)
        }
        return committed.0
    }

    /// Runs `body`'s statements each on its own (autocommit, no BEGIN/COMMIT round trips): for
    /// reads, and single-statement writes; storage failures become `.unavailable`. A write's
    /// implicit commit waits for the synchronous standby as COMMIT does: one the standby did not
    /// confirm (its WARNING) is not acknowledged either.
    package func read<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
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
}

/// The operations (`LineageOperations`' extensions of `LineageBackend`) on PostgreSQL: each
/// write in its own transaction with row locks, each read in autocommit.
extension PostgresStore: LineageBackend, WebhookOutbox {
    package func write<T>(_ body: @escaping (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        try transaction(body)
    }

    /// PostgreSQL's verify writes the mark itself, in its autocommit read, before answering:
    /// conditional on the head still being that token, so a concurrent exchange (which locks
    /// the row) is never undone; a write the synchronous standby did not confirm fails the
    /// read (503), like any unconfirmed commit.
    package func notePresented(_ chain: ChainHead, reading transaction: Transaction) throws(PostgresError) {
        try transaction.query("UPDATE chains SET head_presented = true WHERE id = $1 AND head_generation = $2 AND head_hash = $3",
                              [String(chain.id.rawValue), String(chain.generation), ByteaText.encode(chain.hash)])
    }
}

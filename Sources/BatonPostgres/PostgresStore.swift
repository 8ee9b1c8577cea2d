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
        /// Refuse a cluster that may lose acknowledged commits (`PostgresDurability.refusal`),
        /// checked before anything is written (`serve`, unless `--unsafe-postgres-durability`).
        package var refusesUndurableCluster = false
        /// Listen for the database's announcements (`HeadWatch`): verify answers from memory,
        /// and a write that changed a chain returns once every instance applied it. Off (the
        /// admin command line): such a write waits out `HeadWatch.bound` instead.
        package var watchesHeads = true
        /// Chain rows verify remembers, for all threads (`serve --verify-memory`,
        /// `SharedHeadTable`); 0: verify always reads the database (writes still wait for the
        /// other instances).
        package var rememberedRows = SharedHeadTable.defaultRows
        /// How the token key ring is kept current (`KeyRingCache.Timing`).
        package var keyRing = KeyRingCache.Timing()
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
    /// The announcements' listener; nil when `Options.watchesHeads` is off.
    let heads: HeadWatch?
    package let hasher: PasswordHasher
    package let limits = AttemptLimits()
    private let totals = Locked(CommittedTotals())
    private let commitObserver = Locked<CommitObserver?>(nil)

    /// Connects to `uri`, creating the schema in a database that has none.
    /// - Parameter key: the MAC key every instance shares; nil for the admin CLI (no tokens).
    /// - Throws: `PostgresStoreError` naming the address (never the password).
    package init(uri: String, key: TokenKey?, policy: Policy = Policy(), clock: any WallClock = SystemClock(), options: Options = Options()) throws(PostgresStoreError) {
        // Mapped before anything connects: a host that refuses it stops the start rather than
        // serving every verify from PostgreSQL unsaid.
        var table: SharedHeadTable?
        if options.watchesHeads, options.rememberedRows > 0 {
            table = SharedHeadTable(rows: options.rememberedRows)
            if table == nil { throw .verifyMemory(rows: options.rememberedRows, errno: errno) }
        }
        self.address = PostgresURI.redacted(uri)
        self.policy = policy
        self.clock = clock
        self.keyRing = key.map { KeyRingCache(fileKey: $0, timing: options.keyRing) }
        // A watching instance announces its own changes after COMMIT (`commit(_:_:)`); the
        // triggers then only list them in `baton.changed` (schema-postgresql.sql says why).
        self.pool = ConnectionPool(uri: uri, size: options.poolSize, statementTimeout: options.statementTimeout, waitTimeout: options.statementTimeout,
                                   settings: [PostgresDurability.sessionSetting] + (options.watchesHeads ? ["SET baton.announce = 'after-commit'"] : []))
        self.heads = options.watchesHeads
            ? HeadWatch(uri: uri, statementTimeout: options.statementTimeout, table: table) : nil
        self.hasher = PasswordHasher(parameters: options.hashParameters, concurrency: options.hashConcurrency)
        // The cluster's durability, read before the schema or the key is written: a refused
        // start leaves the database as it found it.
        let durability: PostgresDurability
        do {
            durability = try pool.withConnection { connection throws(PostgresError) in try PostgresDurability.read(connection) }
        } catch {
            release()
            throw .unreachable(address: address, error)
        }
        if options.refusesUndurableCluster, let refusal = durability.refusal {
            release()
            throw .notDurable(refusal)
        }
        let found: Int64?
        do {
            found = try pool.withConnection { connection throws(PostgresError) in try PostgresSchema.prepare(connection, create: options.createSchema) }
        } catch {
            release()
            throw .unreachable(address: address, error)
        }
        guard let found else {
            release()
            throw .noSchema(address: address)
        }
        guard found == PostgresSchema.version else {
            release()
            throw .unknownSchemaVersion(address: address, found: found)
        }
        if let key {
            do throws(PostgresStoreError) { try adoptKey(key, keyPath: options.keyFilePath, replacing: options.replacesRecordedKey) } catch {
                release()
                throw error
            }
            do throws(BatonError) { try loadKeyRing() } catch {
                release()
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
        release()
    }

    /// Closes the pool's idle connections and stops the listener.
    private func release() {
        stopKeyRingWatch()
        pool.close()
        heads?.stop()
    }

    deinit {
        heads?.stop()
        keyRing?.stopWatching()
    }

    package var committedTotals: CommittedTotals { totals.withLock { $0 } }

    package func observeCommits(_ observer: @escaping @Sendable ([AuditEvent]) -> Void) {
        commitObserver.withLock { $0 = CommitObserver(observer) }
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

            """ + headWatchMetricsText() + keyRingMetricsText()
    }

    /// Whether a write can commit now (`/readyz`): a transaction that writes (and so needs a
    /// primary and, with synchronous replication, the standby's acknowledgement).
    package func isWritable() -> Bool {
        (try? transaction { transaction throws(PostgresError) in
            try transaction.query("UPDATE baton_schema SET version = version")
        }) != nil
    }

    /// The listener's state and the writes' waits in Prometheus text (nothing without a listener).
    private func headWatchMetricsText() -> String {
        guard let heads else { return "" }
        let counts = heads.waitCounts
        return """
            # HELP baton_postgres_memory_trusted Whether verify answers from memory now (1): this instance's last heartbeat on baton_heads came back in time.
            # TYPE baton_postgres_memory_trusted gauge
            baton_postgres_memory_trusted \(heads.isFresh ? 1 : 0)
            # HELP baton_postgres_change_waits_total Writes that changed a chain, by how their wait for the other instances ended.
            # TYPE baton_postgres_change_waits_total counter
            baton_postgres_change_waits_total{outcome="confirmed"} \(counts.confirmed)
            baton_postgres_change_waits_total{outcome="peer_silent"} \(counts.peerSilent)
            baton_postgres_change_waits_total{outcome="waited_out"} \(counts.waitedOut)

            """
    }

    // MARK: - Plumbing shared by the operations

    /// Runs `body` in a transaction and commits; storage failures become `.unavailable`.
    /// A commit that may have changed a chain or a user returns once every instance applied
    /// it (`HeadWatch`), so no verify that starts after it trusts a row from before it.
    func transaction<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        let committed: (T, [AuditEvent], changedHeads: Bool, ticket: HeadWatch.WriteTicket?)
        do throws(PostgresError) {
            committed = try pool.withConnection { connection throws(PostgresError) -> (T, [AuditEvent], changedHeads: Bool, ticket: HeadWatch.WriteTicket?) in
                let transaction = Transaction(connection, defersWrites: true)
                do throws(PostgresError) {
                    try transaction.query("BEGIN")  // sent with the first statement that answers
                    let value = try body(transaction)
                    if transaction.isRollbackOnly {
                        if transaction.hasSent { try connection.execute("ROLLBACK") }
                        return (value, [], false, nil)
                    }
                    try transaction.writeOutbox()
                    _ = connection.takeWarnings()
                    let ticket = try commit(transaction, connection)
                    // A warning on COMMIT: "canceling wait for synchronous replication", when the
                    // standby did not confirm in time and the connection cancelled the wait
                    // (PostgresConnection.answer(to:)). The commit is local only and could be lost
                    // in a failover, so it is not acknowledged: 503, and the client retries (R3a).
                    guard connection.takeWarnings() == 0 else {
                        if let ticket { heads?.abandon(ticket) }
                        throw PostgresError(message: "the commit was not confirmed by the synchronous standby in time")
                    }
                    return (value, transaction.events, transaction.mayChangeHeads, ticket)
                } catch {
                    if transaction.hasSent { try? connection.execute("ROLLBACK") }
                    throw error
                }
            }
        } catch {
            throw .unavailable("PostgreSQL at \(address): \(error.message)")
        }
        if committed.changedHeads { awaitApplied(committed.ticket, committedAt: HeadWatch.now()) }
        if !committed.1.isEmpty {
            totals.withLock { totals in for event in committed.1 { totals.count(event) } }
            commitObserver.withLock { $0 }?.notify(committed.1)
        }
        return committed.0
    }

    /// Runs `body`'s statements each on its own (autocommit, no BEGIN/COMMIT round trips): for
    /// reads, and single-statement writes; storage failures become `.unavailable`. A write's
    /// implicit commit waits for the synchronous standby as COMMIT does: one the standby did not
    /// confirm (its WARNING) is not acknowledged either. One that may have changed a chain or
    /// a user waits for the other instances as `transaction` does.
    package func read<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        let value: T, changedHeads: Bool, ticket: HeadWatch.WriteTicket?
        do throws(PostgresError) {
            (value, changedHeads, ticket) = try pool.withConnection { connection throws(PostgresError) -> (T, Bool, HeadWatch.WriteTicket?) in
                _ = connection.takeWarnings()
                let transaction = Transaction(connection)
                let value: T
                var ticket: HeadWatch.WriteTicket?
                do throws(PostgresError) {
                    value = try body(transaction)
                    // Autocommit keeps no list of changes (`baton.changed` ends with each
                    // statement): a write here is announced as everything, with the writer's tag.
                    if let heads, transaction.mayChangeHeads {
                        let issued = heads.issueTicket()
                        ticket = issued
                        let announcement = HeadWatch.unsyncedNotifyStatement(
                            HeadAnnouncement.write(.init(instance: heads.instance, tag: issued.tag, change: .everything)).payload)
                        _ = try connection.pipeline([announcement])
                    }
                } catch {
                    if let ticket { heads?.abandon(ticket) }
                    // A statement may have committed unannounced: the listener announces everything.
                    if transaction.mayChangeHeads { heads?.announceEverything() }
                    throw error
                }
                guard connection.takeWarnings() == 0 else {
                    if let ticket { heads?.abandon(ticket) }
                    throw PostgresError(message: "a write was not confirmed by the synchronous standby in time")
                }
                return (value, transaction.mayChangeHeads, ticket)
            }
        } catch {
            throw .unavailable("PostgreSQL at \(address): \(error.message)")
        }
        if changedHeads { awaitApplied(ticket, committedAt: HeadWatch.now()) }
        return value
    }

    /// Commits, sending the writes still queued in the same round trip. A watching instance's
    /// transaction that may have changed a chain or a user announces what the triggers listed,
    /// in the same pipeline as its COMMIT but after it, in a transaction of its own
    /// (`HeadWatch.unsyncedNotify`): a NOTIFY inside the transaction would hold PostgreSQL's
    /// notification lock through the commit's flush. The list outlives the COMMIT in a session
    /// setting written just before it (`HeadWatch.commitAnnouncing`), so the whole commit is
    /// one round trip. An error after the COMMIT may follow a commit that stands: the
    /// listener then announces everything.
    /// Returns the writer's ticket when the commit was announced (`HeadWatch.issueTicket`).
    private func commit(_ transaction: Transaction, _ connection: PostgresConnection) throws(PostgresError) -> HeadWatch.WriteTicket? {
        guard let heads, transaction.mayChangeHeads else {
            try transaction.finish([PostgresStatement("COMMIT")])
            return nil
        }
        let ticket = heads.issueTicket()
        do throws(PostgresError) {
            try transaction.finish(HeadWatch.commitAnnouncing(instance: heads.instance, ticket: ticket))
            return ticket
        } catch {
            heads.abandon(ticket)
            // Still inside the failed transaction: the COMMIT never ran, nothing to announce.
            if connection.isInFailedTransaction { throw error }
            // The commit may stand unannounced, and a retry may find nothing left to change
            // (a revocation already made): announce everything before answering, on another
            // connection, and have the listener do it too in case that fails.
            heads.announceEverything()
            _ = try? pool.withConnection { other throws(PostgresError) in try other.execute(HeadWatch.unsyncedNotify("*")) }
            throw error
        }
    }

    /// After a commit that may have changed a chain or a user: until every instance applied
    /// it (its announcement, `ticket`, came back and was confirmed), or `HeadWatch.bound`
    /// passed (the command line, which does not listen and so has no ticket, waits that out).
    private func awaitApplied(_ ticket: HeadWatch.WriteTicket?, committedAt: UInt64) {
        if let heads, let ticket { heads.awaitApplied(ticket, committedAt: committedAt) } else { HeadWatch.waitOutBound(committedAt: committedAt) }
    }
}

/// The operations (`LineageOperations`' extensions of `LineageBackend`) on PostgreSQL: each
/// write in its own transaction with row locks, each read in autocommit.
extension PostgresStore: LineageBackend, WebhookOutbox {
    package func write<T>(_ body: @escaping (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        try transaction(body)
    }

    /// The chain's row from memory when no announcement made it stale and the
    /// listener is current (`HeadWatch.recall`); nil: read the database.
    package func recalledChain(_ id: ChainID) -> ChainRecord? { heads?.recall(id) }

    package func readRemembering<T>(
        _ body: (Transaction, _ remember: (ChainRecord) -> Void) throws(PostgresError) -> T
    ) throws(BatonError) -> T {
        guard let heads, let ticket = heads.ticket() else {
            return try read { transaction throws(PostgresError) in try body(transaction) { _ in } }
        }
        var rows: [ChainRecord] = []
        let value = try read { transaction throws(PostgresError) in try body(transaction) { rows.append($0) } }
        heads.remember(rows, ticket: ticket)
        return value
    }

    /// PostgreSQL's verify writes the mark itself, in its autocommit read, before answering:
    /// conditional on the head still being that token, so a concurrent exchange (which locks
    /// the row) is never undone; a write the synchronous standby did not confirm fails the
    /// read (503), like any unconfirmed commit.
    package func notePresented(_ chain: ChainHead, reading transaction: Transaction) throws(PostgresError) {
        // Neither waited for nor announced by a serving instance (its autocommit statement's
        // list of changes is dropped): a remembered row is used only once marked presented
        // (`recalledHead`), so the mark changes no verify's answer. The verify that wrote it
        // remembers the row as marked (`readHead`).
        try transaction.queryWithoutWaiting("UPDATE chains SET head_presented = true WHERE id = $1 AND head_generation = $2 AND head_hash = $3",
                              [String(chain.id.rawValue), String(chain.generation), ByteaText.encode(chain.hash)])
    }
}

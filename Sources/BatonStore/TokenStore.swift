import BatonCore
import BatonOperations
import BatonStorage
import Glibc
import Synchronization

/// The lineage store: logins, exchanges, verification, logout and account changes, applied
/// to one SQLite file under the rules R1-R7.
///
/// Thread-safe; every method blocks its caller. Writes go through one `GroupCommitWriter`
/// (one connection, shared transactions, answered after commit); reads use a pool of WAL
/// readers and never wait for the writer. The server calls this type directly.
package final class TokenStore: Sendable {
    /// How the store opens its file and spends its resources.
    package struct Options: Sendable {
        /// Create the database (and key) when missing. The admin CLI sets this only for `user add`.
        package var create = true
        /// Open the file read-only (admin commands that only read): works on a 0444 backup copy
        /// or in a read-only directory; every write then fails as read-only.
        package var readOnly = false
        /// How long a write waits for a lock held by another process (the admin CLI).
        package var busyTimeout: Duration = .seconds(5)
        /// argon2id cost.
        package var hashParameters = PasswordHasher.Parameters()
        /// Password hashes allowed to run at once (bounds login CPU); default: half the cores.
        package var hashConcurrency = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) / 2)
        /// Writes per transaction at most.
        package var maxBatch = 1024
        /// The key file the key came from, for messages and the audit (default: `<db>.key`).
        package var keyFilePath: String?
        /// `serve --new-key`: a key other than the one the database records replaces it
        /// (audited) instead of being refused.
        package var replacesRecordedKey = false
        /// Chain rows verify remembers, for all threads (`HeadMemory`, `serve --verify-memory`;
        /// `SharedHeadTable`, 256 bytes a row); 0: verify always reads the database.
        package var rememberedRows = SharedHeadTable.defaultRows
        /// How the token key ring is kept current (`KeyRingCache.Timing`).
        package var keyRing = KeyRingCache.Timing()
        /// When the background checkpointer copies the WAL into the database, and how long the WAL may grow.
        package var checkpoints = Checkpointer.Limits()
        /// The connections' `PRAGMA synchronous`: `.full`, but for baton-crash's mutant.
        package var synchronous = Connection.Synchronous.full
        package init() {}
    }

    /// The database file.
    package let path: String
    /// The lifetimes and device rules in force.
    package let policy: Policy
    package let clock: any WallClock
    /// The token key ring as this process last read it; nil for a store opened without the
    /// key (admin CLI): token operations are then a bug.
    package let keyRing: KeyRingCache?
    let writer: GroupCommitWriter
    /// nil for a store opened read-only.
    let checkpointer: Checkpointer?
    let readers: ReaderPool
    package let hasher: PasswordHasher
    package let limits = AttemptLimits()

    /// Opens (or creates) the database at `path`.
    /// - Parameter key: the MAC key for tokens; nil when the caller issues and checks none.
    /// - Throws: `StoreError` when the file is missing, of another version, or unusable.
    package init(path: String, key: TokenKey?, policy: Policy = Policy(), clock: any WallClock = SystemClock(), options: Options = Options()) throws(StoreError) {
        if !options.create || options.readOnly, access(path, F_OK) != 0 { throw .databaseMissing(path) }
        // Verify's memory is mapped before the file is touched: a host that refuses it (strict
        // overcommit, an address-space limit) stops the start, leaving nothing behind, rather
        // than serving every verify from the database unsaid.
        var table: SharedHeadTable?
        if key != nil, !options.readOnly, options.rememberedRows > 0 {
            table = SharedHeadTable(rows: options.rememberedRows)
            if table == nil { throw .verifyMemory(rows: options.rememberedRows, errno: errno) }
        }
        var connectionOptions = Connection.Options()
        connectionOptions.create = options.create && !options.readOnly
        connectionOptions.readOnlyFile = options.readOnly
        connectionOptions.busyTimeout = options.busyTimeout
        connectionOptions.synchronous = options.synchronous
        if connectionOptions.create { Self.createOwnerOnly(path) }
        var connection: Connection
        do { connection = try Connection(path: path, options: connectionOptions) } catch { throw .sqlite(error, path: path) }
        if options.readOnly {
            do throws(StoreError) { try Schema.check(connection) } catch .olderVersion(let path, let found) {
                // A read-only command on an older file migrates it first (docs/deploy.md:
                // any `baton admin` command does), then reads the migrated file read-only.
                connection.close()
                try Schema.migrateOlderVersion(at: path, found: found, busyTimeout: options.busyTimeout)
                do { connection = try Connection(path: path, options: connectionOptions) } catch { throw .sqlite(error, path: path) }
                try Schema.check(connection)
            }
        } else {
            do throws(StoreError) {
                try Schema.prepare(connection)
                if let key {
                    try Self.adoptKey(key, keyPath: options.keyFilePath ?? KeyFile.defaultPath(forDatabase: path),
                                      replacing: options.replacesRecordedKey, on: connection, now: clock.now())
                }
            } catch {
                connection.close()  // the last connection removes the -wal and -shm it made
                throw error
            }
        }
        var memory: HeadMemory?
        if options.readOnly {
            checkpointer = nil  // nothing is written, so nothing to copy (and no right to)
        } else {
            do {
                // Checkpoints run on their own thread and connection, never inside the writer's COMMIT.
                try connection.disableAutomaticCheckpoints()
                if let table {
                    // Verify's memory needs to know every row the writer changes (docs/design.md).
                    try connection.observeRowChanges()
                    memory = HeadMemory(writer: connection, table: table)
                }
                // After the WAL restarts, its file is cut back to this size ("journal_size_limit").
                try connection.execute("PRAGMA journal_size_limit = \(options.checkpoints.restartAt * (try connection.pageSize()))")
                checkpointer = try Checkpointer(path: path, busyTimeout: options.busyTimeout, limits: options.checkpoints)
            } catch {
                connection.close()
                throw .sqlite(error, path: path)
            }
        }
        self.path = path
        self.policy = policy
        self.clock = clock
        self.keyRing = key.map { KeyRingCache(fileKey: $0, timing: options.keyRing) }
        self.writer = GroupCommitWriter(connection: connection, checkpointer: checkpointer, memory: memory, maxBatch: options.maxBatch, busyTimeout: options.busyTimeout)
        self.readers = ReaderPool(path: path, busyTimeout: options.busyTimeout, readOnlyFile: options.readOnly)
        self.hasher = PasswordHasher(parameters: options.hashParameters, concurrency: options.hashConcurrency)
        do throws(BatonError) { try loadKeyRing() } catch {
            close()
            throw .keyFile(error.detail)
        }
    }

    /// Creates a missing database file empty (an empty file is an empty SQLite database) with
    /// mode 0600 whatever the umask: SQLite would create it 0644 under the usual umask 022, and
    /// gives its -wal and -shm files the database file's mode. An existing file is left alone;
    /// a failure here is left for SQLite's open to report.
    private static func createOwnerOnly(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        Glibc.close(fd)
    }

    /// Finishes queued writes and closes every connection. Later calls fail with `.unavailable`.
    package func close() {
        stopKeyRingWatch()
        drainProofFailures()  // the counts of open windows of refused proofs, while the writer runs
        readers.close()
        checkpointer?.stop()
        writer.stop()  // the last connection: closing it checkpoints everything and removes the WAL
    }

    /// Group-commit counters: batches committed, writes in them, the largest batch.
    package var commitStatistics: (batches: Int, writes: Int, largestBatch: Int) {
        let stats = writer.statistics
        return (stats.batches, stats.jobs, stats.largestBatch)
    }

    /// Committed totals for metrics: audit events by kind, revocations by reason, failed
    /// confirmations by reason.
    package var committedTotals: CommittedTotals { writer.statistics.totals }

    package func observeCommits(_ observer: @escaping @Sendable ([AuditEvent]) -> Void) {
        writer.observeCommits(observer)
    }

    /// The group-commit batch-size histogram (bucket i holds batches of 2^i ..< 2^(i+1) writes).
    var batchSizes: [Int] { writer.statistics.sizeBuckets }

    /// Checkpoint counters: PASSIVE and TRUNCATE checkpoints of the background checkpointer,
    /// the writer's own finishing checkpoints and the time they took, the longest WAL (frames).
    package var checkpointStatistics: (passive: Int, truncated: Int, byWriter: Int, writerSeconds: Double, writerLongestSeconds: Double, longestWAL: Int) {
        let stats = checkpointer?.statistics ?? Checkpointer.Statistics()
        return (stats.passive, stats.truncated, stats.finishedByWriter, stats.writerSeconds, stats.writerLongestSeconds, stats.longestWAL)
    }

    /// Whether a write can be made durable now (readiness probe). Rewriting the schema version
    /// with its own value changes no data but writes and syncs one page (page 1, through the
    /// WAL), so a full disk, a read-only file or a lock held past the busy timeout shows here;
    /// an empty transaction would commit without touching the disk.
    package func isWritable() -> Bool {
        (try? writer.write { connection throws(SQLiteError) -> Bool in
            let version = try connection.statement("PRAGMA user_version").first { $0.int(0) } ?? 0
            try connection.execute("PRAGMA user_version = \(version)")
            return true
        }) == true
    }

    // MARK: - Transactions

    /// Runs `body` on a WAL reader (committed state, never waiting for the writer); storage
    /// failures become `.unavailable`.
    func readConnection<T>(_ body: (Connection) throws(SQLiteError) -> T) throws(BatonError) -> T {
        do { return try readers.read(body) } catch { throw .unavailable(error.explanation(path: path)) }
    }

    /// Runs `body` in the writer's next committed batch; storage failures become `.unavailable`.
    func writeConnection<T>(_ body: @escaping (Connection) throws(SQLiteError) -> T) throws(BatonError) -> T {
        do { return try writer.write(body) } catch { throw .unavailable(error.explanation(path: path)) }
    }

    /// `writeConnection` without waiting: `then` runs on the writer's thread after the commit.
    func writeConnection<T>(_ body: @escaping (Connection) throws(SQLiteError) -> T, then: @escaping (Result<T, BatonError>) -> Void) {
        writer.write(body) { [path] result in then(result.mapError { .unavailable($0.explanation(path: path)) }) }
    }
}

/// The operations (`LineageOperations`' extensions of `LineageBackend`) on SQLite: writes in
/// the group-commit writer's batches, reads on the WAL readers.
extension TokenStore: LineageBackend, WebhookOutbox {
    package func write<T>(_ body: @escaping (SQLiteTransaction) throws(SQLiteError) -> T) throws(BatonError) -> T {
        try writeConnection { connection throws(SQLiteError) in try body(SQLiteTransaction(connection: connection)) }
    }

    /// The writer thread answers: nothing waits for the commit (`LineageBackend.write(_:then:)`).
    package func write<T>(_ body: @escaping (SQLiteTransaction) throws(SQLiteError) -> T,
                          then: @escaping @Sendable (Result<T, BatonError>) -> Void) {
        writeConnection({ connection throws(SQLiteError) in try body(SQLiteTransaction(connection: connection)) }, then: then)
    }

    package var writesWithoutWaiting: Bool { true }

    package func read<T>(_ body: (SQLiteTransaction) throws(SQLiteError) -> T) throws(BatonError) -> T {
        try readConnection { connection throws(SQLiteError) in try body(SQLiteTransaction(connection: connection)) }
    }

    /// The chain's row from `HeadMemory` when it is provably the committed one;
    /// nil: read the database (and ask the writer to catch up when another process wrote).
    package func recalledChain(_ id: ChainID) -> ChainRecord? {
        guard let memory = writer.memory else { return nil }
        switch memory.recall(id) {
        case .remembered(let record): return record
        case .absent: return nil
        case .unknown:
            writer.requestSync()
            return nil
        }
    }

    package func readRemembering<T>(
        _ body: (SQLiteTransaction, _ remember: (ChainRecord) -> Void) throws(SQLiteError) -> T
    ) throws(BatonError) -> T {
        guard let memory = writer.memory, let ticket = memory.ticket() else {
            return try read { transaction throws(SQLiteError) in try body(transaction) { _ in } }
        }
        var rows: [ChainRecord] = []
        let value = try read { transaction throws(SQLiteError) in try body(transaction) { rows.append($0) } }
        memory.remember(rows, readWith: ticket)
        return value
    }

    /// SQLite's verify reads off the writer and must not wait for it: the mark is queued for
    /// the writer's next batch (`GroupCommitWriter.markPresented`), written there only if the
    /// head is still that token. docs/design.md explains why answering first is safe.
    package func notePresented(_ chain: ChainHead, reading transaction: SQLiteTransaction) {
        writer.markPresented(chain.id, .init(generation: chain.generation, hash: chain.hash))
    }
}

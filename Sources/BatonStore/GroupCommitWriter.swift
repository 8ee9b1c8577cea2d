import BatonSync
import BatonCore
import BatonStorage
import Dispatch
import Glibc
import Synchronization

/// The single writer. Owns the one read-write connection and a thread that drains queued
/// writes into shared `BEGIN IMMEDIATE … COMMIT` transactions (group commit): while one
/// batch waits for its fsync, the next batch queues up, so a commit's cost is shared by
/// every caller in it. A caller is answered only after its batch committed (durable with
/// `synchronous=FULL`).
///
/// A write that throws inside a batch rolls the batch back; its members are then re-run one
/// transaction each, so one failing write cannot fail the writes batched with it. A failure
/// of `BEGIN` or `COMMIT` itself (busy past the timeout, disk full) fails the whole batch.
final class GroupCommitWriter: @unchecked Sendable {
    /// A queued write: its work runs on the writer thread inside the batch's transaction, and
    /// `finished` once, on the writer thread, when the batch is durable (nil) or failed.
    private final class Job: @unchecked Sendable {
        let run: (Connection) throws(SQLiteError) -> Void
        let finished: (SQLiteError?) -> Void
        let queuedAt = ContinuousClock.now
        init(_ run: @escaping (Connection) throws(SQLiteError) -> Void, finished: @escaping (SQLiteError?) -> Void) {
            self.run = run
            self.finished = finished
        }
    }

    /// A head that verify saw presented: recorded later, without making verify wait (R3a).
    struct PresentedMark: Sendable {
        var generation: Int
        var hash: [UInt8]
    }

    /// Batch sizes observed, for metrics and the benchmark.
    struct Statistics: Sendable {
        var batches = 0
        var jobs = 0
        var largestBatch = 0
        /// Batches by size: [1], [2-3], [4-7], ..., [512-1023], [1024+].
        var sizeBuckets = [Int](repeating: 0, count: 11)
        /// Audit events, revocations and failed confirmations committed.
        var totals = CommittedTotals()
    }

    private let connection: Connection
    private let checkpointer: Checkpointer?
    private let lock = ConditionLock()
    private var pending: [Job] = []
    private var marks: [ChainID: PresentedMark] = [:]
    /// Marks whose batch failed wait until then before the next try (a full disk or a held
    /// lock would otherwise make the writer spin on them).
    private var marksRetryAt: ContinuousClock.Instant?
    private var stopping = false
    private let maxBatch: Int
    private let busyTimeout: Duration
    private let stopped = DispatchSemaphore(value: 0)
    /// Verify's memory of committed rows, kept current by this writer's commits (nil: none).
    let memory: HeadMemory?
    /// A verify found the database changed by another process: run an empty transaction to
    /// learn the new state (`HeadMemory.writeBegan`), at most once per `syncSpacing`.
    private let syncRequested = Atomic<Bool>(false)
    private var syncNotBefore = ContinuousClock.now
    private static let syncSpacing = Duration.milliseconds(5)
    private let stats = Mutex(Statistics())
    private let commitObserver = Mutex<CommitObserver?>(nil)

    /// - Parameters:
    ///   - checkpointer: copies the WAL into the database; the connection's automatic
    ///     checkpoint must then be off (`Connection.disableAutomaticCheckpoints`).
    ///   - busyTimeout: how long a write waits in all for a lock another process holds.
    ///   - memory: verify's remembered rows, which this writer's commits keep current.
    init(connection: Connection, checkpointer: Checkpointer?, memory: HeadMemory? = nil, maxBatch: Int = 1024, busyTimeout: Duration = .seconds(5)) {
        self.connection = connection
        self.memory = memory
        self.checkpointer = checkpointer
        self.maxBatch = maxBatch
        self.busyTimeout = busyTimeout
        spawn(stackSize: nil) { [self] in loop() }
    }

    /// Runs `work` in the next batch and returns its result once the batch is durable.
    /// - Throws: the `SQLiteError` that failed it, or a `SQLITE_MISUSE` one after `stop()`.
    func write<T>(_ work: @escaping (Connection) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let done = DispatchSemaphore(value: 0)
        var outcome: Result<T, SQLiteError>?
        write(work) { result in
            outcome = result
            done.signal()
        }
        done.wait()
        return try outcome!.get()
    }

    /// Runs `work` in the next batch without waiting for it: `then` gets its result on the
    /// writer's thread once the batch is durable, or the `SQLiteError` that failed it (on the
    /// caller's thread, before this returns, after `stop()`). Whatever `then` does delays the
    /// next batch: it should hand its answer on, not work on it.
    func write<T>(_ work: @escaping (Connection) throws(SQLiteError) -> T, then: @escaping (Result<T, SQLiteError>) -> Void) {
        var result: T?
        let job = Job({ connection throws(SQLiteError) in result = try work(connection) },
                      finished: { failure in then(failure.map { .failure($0) } ?? .success(result!)) })
        let accepted = lock.withLock { () -> Bool in
            guard !stopping else { return false }
            pending.append(job)
            lock.signal()
            return true
        }
        if !accepted { then(.failure(SQLiteError(code: 21, message: "the store is shutting down"))) }
    }

    /// Queues "this head was presented" without waiting for it to be written.
    func markPresented(_ chain: ChainID, _ mark: PresentedMark) {
        lock.withLock {
            guard !stopping else { return }
            marks[chain] = mark
            lock.signal()
        }
    }

    /// Asks for an empty transaction soon, so that `memory` learns a state another process
    /// made (`HeadMemory.Recall.unknown`). Takes the writer's lock once per request, not per verify.
    func requestSync() {
        guard memory != nil, syncRequested.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        lock.withLock { lock.signal() }
    }

    /// Finishes every queued write, then stops the thread and closes the connection. Later writes throw.
    func stop() {
        if lock.raise(&stopping) { stopped.wait() }
    }

    var statistics: Statistics { stats.withLock { $0 } }

    private func loop() {
        while true {
            let (batch, batchMarks, exit) = lock.withLock { () -> ([Job], [ChainID: PresentedMark], Bool) in
                while pending.isEmpty && !stopping && (marks.isEmpty || marksRetryAt.map { ContinuousClock.now < $0 } == true)
                        && !(syncRequested.load(ordering: .relaxed) && syncNotBefore <= .now) {
                    if syncRequested.load(ordering: .relaxed) {
                        lock.wait(milliseconds: 5)
                    } else if marks.isEmpty { lock.wait() } else { lock.wait(milliseconds: 100) }
                }
                let batch: [Job]
                if pending.count <= maxBatch {  // the usual case: all of it, without copying
                    batch = pending
                    pending = []
                } else {
                    batch = Array(pending.prefix(maxBatch))
                    pending.removeFirst(maxBatch)
                }
                let taken = marks
                marks = [:]
                return (batch, taken, stopping && pending.isEmpty && batch.isEmpty && taken.isEmpty)
            }
            if exit { break }
            // Every transaction tells the memory the state it found, so a sync is any commit.
            if syncRequested.exchange(false, ordering: .relaxed) { syncNotBefore = .now + Self.syncSpacing }
            commit(batch, marks: batchMarks)
        }
        // Closing the last connection checkpoints the WAL and removes it: a clean stop. The
        // memory reads the WAL index through this connection's mapping: stopped first.
        memory?.close()
        connection.close()
        stopped.signal()
    }

    private func commit(_ batch: [Job], marks: [ChainID: PresentedMark]) {
        var failedJob: Int?
        // A write waits for another process's lock at most `busyTimeout` in all, counted from
        // when it was queued: batches that waited and failed before it (a held lock) do not
        // add their waits to its own, so an exchange answers 503 within the bound.
        let oldest = batch.map(\.queuedAt).min() ?? .now
        connection.setBusyTimeout(busyTimeout - (ContinuousClock.now - oldest))
        do {
            connection.uncommittedEvents.removeAll(keepingCapacity: true)
            connection.changedChains.removeAll(keepingCapacity: true)
            connection.changedUsers = false
            let framedBefore = connection.framedCommits
            try connection.transaction { () throws(SQLiteError) in
                // Holding SQLite's write lock now: no other process can commit until COMMIT.
                memory?.writeBegan()
                try recordPresented(marks)
                // A mark only sets `head_presented` on the head it names, which verify remembers
                // as marked already (`readHead`): not a change that makes a remembered row stale.
                connection.changedChains.removeAll(keepingCapacity: true)
                for (index, job) in batch.enumerated() {
                    failedJob = index
                    try job.run(connection)
                }
                failedJob = nil
            }
            // Before anyone is answered: a verify that starts after the answer must not use a
            // row this batch changed.
            memory?.committed(chains: connection.changedChains, usersChanged: connection.changedUsers,
                              wroteFrames: connection.framedCommits != framedBefore)
            count(connection.uncommittedEvents)
            finish(batch, failure: nil)
            // After the callers are answered: only the next batch can wait for this, and only
            // once per `Checkpointer.Limits.restartAt` frames (see Checkpointer).
            if let checkpointer, checkpointer.committed(walFrames: connection.walFrames) {
                let started = Self.seconds()
                let result = try? connection.checkpoint(.passive)
                checkpointer.writerFinished(result, seconds: Self.seconds() - started)
            }
        } catch {
            memory?.failed()
            requeue(marks)
            if failedJob != nil && batch.count > 1 {
                // One write failed: isolate it by giving every write its own transaction.
                for job in batch { commit([job], marks: [:]) }
            } else {
                finish(batch, failure: error)
            }
        }
    }

    /// Puts back the marks of a failed batch (unless a newer mark for the chain arrived), to
    /// be retried after a pause: a verify's "presented" (R3a) must survive a full disk or a
    /// held lock. Dropped when stopping: the writer must be able to finish.
    private func requeue(_ failed: [ChainID: PresentedMark]) {
        guard !failed.isEmpty else { return }
        lock.withLock {
            guard !stopping else { return }
            for (chain, mark) in failed where marks[chain] == nil { marks[chain] = mark }
            marksRetryAt = .now + .milliseconds(200)
        }
    }

    private static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private func recordPresented(_ marks: [ChainID: PresentedMark]) throws(SQLiteError) {
        guard !marks.isEmpty else { return }
        let update = try connection.statement(
            "UPDATE chains SET head_presented = 1 WHERE id = ? AND head_generation = ? AND head_hash = ? AND head_presented = 0")
        for (chain, mark) in marks {
            try update.execute([.int(chain.rawValue), .int(Int64(mark.generation)), .blob(mark.hash)])
        }
    }

    private func count(_ events: [AuditEvent]) {
        guard !events.isEmpty else { return }
        stats.withLock { stats in
            for event in events { stats.totals.count(event) }
        }
        commitObserver.withLock { $0 }?.notify(events)
    }

    /// Hands each committed batch's audit events to `observer` (`LineageStore.observeCommits`).
    func observeCommits(_ observer: @escaping @Sendable ([AuditEvent]) -> Void) {
        commitObserver.withLock { $0 = CommitObserver(observer) }
    }

    private func finish(_ batch: [Job], failure: SQLiteError?) {
        if !batch.isEmpty, failure == nil {
            stats.withLock {
                $0.batches += 1
                $0.jobs += batch.count
                $0.largestBatch = max($0.largestBatch, batch.count)
                $0.sizeBuckets[min(10, Int.bitWidth - 1 - batch.count.leadingZeroBitCount)] += 1
            }
        }
        for job in batch { job.finished(failure) }
    }
}

import BatonSync
import Dispatch
import Glibc
import Synchronization

/// Copies the WAL into the database file on its own thread and its own connection, so that
/// no commit waits for a checkpoint, and keeps the WAL bounded under constant load.
///
/// SQLite's automatic checkpoint runs inside the `COMMIT` that crosses 1000 WAL frames, on
/// the committing connection: with one writer, every queued exchange waited for it (up to
/// 300 ms under load, docs/benchmarks.md). The writer turns it off
/// (`Connection.disableAutomaticCheckpoints`) and reports the WAL's length after each commit.
/// This type then runs:
/// * a **PASSIVE** checkpoint each time `passiveEvery` frames were appended since the last
///   one. PASSIVE takes no lock the writer needs, so commits go on meanwhile;
/// * a **TRUNCATE** checkpoint after `idleAfter` without commits, leaving a zero-byte WAL.
///
/// PASSIVE alone cannot shrink the WAL under constant load: SQLite restarts the WAL from its
/// start only when a write transaction begins while every frame is already copied, and the
/// group-commit writer begins the next batch right after each commit. So once the WAL holds
/// `restartAt` frames, the writer itself copies the few frames this thread has not copied
/// yet (`shouldWriterFinish`), between two batches; its next transaction restarts the WAL,
/// and `journal_size_limit` cuts the file back. That pause copies at most `catchUpAt` frames
/// plus one fsync of the database file, once per `restartAt` frames, instead of 1000 frames
/// every 1000.
package final class Checkpointer: @unchecked Sendable {
    /// When to checkpoint, in WAL frames (one page each: 2 KiB in a database made now, 4 KiB in
    /// one made before 0.2.0; `Connection.newDatabasePageSize`).
    package struct Limits: Sendable, Equatable {
        /// A PASSIVE checkpoint once this many frames were appended since the last one (8 MiB of 2 KiB pages).
        /// A checkpoint copies each page once however many frames hold it, so a longer
        /// interval copies fewer pages in all; readers skip copied frames, so it stays short
        /// enough that their WAL index lookups stay cheap (one 4096-frame hash table).
        package var passiveEvery = 4096
        /// WAL length at which the writer finishes a checkpoint so the WAL restarts (32 MiB of 2 KiB pages).
        package var restartAt = 16384
        /// The writer finishes only when at most this many frames are left to copy (this thread
        /// checkpoints back to back once the WAL is that long, to bring the rest down)...
        package var catchUpAt = 256
        /// ...unless the WAL reached twice `restartAt`: then it finishes whatever is left.
        package var hardLimit: Int { 2 * restartAt }
        /// A TRUNCATE checkpoint once no commit came for this long.
        package var idleAfter: Duration = .seconds(1)
        package init() {}
    }

    /// Checkpoints run, for tests and metrics.
    struct Statistics: Sendable, Equatable {
        var passive = 0
        var truncated = 0
        var finishedByWriter = 0
        /// Time the writer spent finishing checkpoints: in total, and the longest once.
        var writerSeconds = 0.0
        var writerLongestSeconds = 0.0
        /// The longest WAL seen after a commit, in frames.
        var longestWAL = 0
    }

    let limits: Limits
    private let connection: Connection
    /// The database file, opened read-only only to `fdatasync` it (see `run`).
    private let databaseFile: Int32
    private let lock = ConditionLock()
    /// The WAL's length after the latest commit, and frames copied by the latest checkpoint.
    private var frames = 0
    private var backfilled = 0
    private var committedSinceIdleCheck = false
    private var stopping = false
    private let stopped = DispatchSemaphore(value: 0)
    private let stats = Mutex(Statistics())

    /// Opens the checkpointer's own connection to `path` and starts its thread.
    /// - Throws: `SQLiteError` when the connection cannot be opened.
    init(path: String, busyTimeout: Duration, limits: Limits) throws(SQLiteError) {
        var options = Connection.Options()
        options.create = false
        // TRUNCATE waits for the writer's lock through the busy handler; it only runs when
        // the writer is idle, so a short wait is plenty and never holds anything up.
        options.busyTimeout = min(busyTimeout, .milliseconds(100))
        self.connection = try Connection(path: path, options: options)
        self.databaseFile = open(path, O_RDONLY | O_CLOEXEC)
        self.limits = limits
        spawn(stackSize: nil) { [self] in loop() }
    }

    /// The writer, after each commit: the WAL now holds `walFrames` frames.
    /// - Returns: whether the writer should finish the checkpoint itself now (see the type).
    func committed(walFrames: Int) -> Bool {
        let copied = lock.withLock { () -> Int in
            frames = walFrames
            committedSinceIdleCheck = true
            if isDue { lock.signal() }
            return backfilled
        }
        stats.withLock { $0.longestWAL = max($0.longestWAL, walFrames) }
        return Self.shouldWriterFinish(frames: walFrames, backfilled: copied, limits)
    }

    /// The writer finished a checkpoint itself (`shouldWriterFinish` said so).
    func writerFinished(_ result: Connection.CheckpointResult?, seconds: Double) {
        guard let result else { return }
        lock.withLock { backfilled = result.backfilled }
        stats.withLock {
            $0.finishedByWriter += 1
            $0.writerSeconds += seconds
            $0.writerLongestSeconds = max($0.writerLongestSeconds, seconds)
        }
    }

    /// Stops the thread and closes the connection (the writer's close makes the last checkpoint).
    func stop() {
        if lock.raise(&stopping) { stopped.wait() }
    }

    var statistics: Statistics { stats.withLock { $0 } }

    /// Frames not yet copied. A WAL shorter than what was copied has been restarted since.
    static func pending(frames: Int, backfilled: Int) -> Int {
        frames >= backfilled ? frames - backfilled : frames
    }

    /// Whether the writer should copy the rest itself so that its next transaction restarts
    /// the WAL: the WAL is long and little is left to copy, or it is far too long.
    static func shouldWriterFinish(frames: Int, backfilled: Int, _ limits: Limits) -> Bool {
        guard frames >= limits.restartAt else { return false }
        return pending(frames: frames, backfilled: backfilled) <= limits.catchUpAt || frames >= limits.hardLimit
    }

    /// Whether a PASSIVE checkpoint should run now (lock held): enough new frames, or a WAL
    /// long enough to restart with more than the writer should copy itself.
    private var isDue: Bool {
        let left = Self.pending(frames: frames, backfilled: backfilled)
        return left >= limits.passiveEvery || (frames >= limits.restartAt && left > limits.catchUpAt)
    }

    private enum Work { case passive, truncate, stop }

    private func loop() {
        while true {
            let work = lock.withLock { () -> Work in
                while true {
                    if stopping { return .stop }
                    if isDue { return .passive }
                    committedSinceIdleCheck = false
                    lock.wait(milliseconds: Int(limits.idleAfter.wholeMilliseconds))
                    if !stopping, !committedSinceIdleCheck, frames > 0,
                       Self.pending(frames: frames, backfilled: backfilled) < limits.passiveEvery { return .truncate }
                }
            }
            switch work {
            case .stop:
                connection.close()
                if databaseFile >= 0 { close(databaseFile) }
                stopped.signal()
                return
            case .passive:
                run(.passive)
            case .truncate:
                run(.passive)  // copy without the write lock first: TRUNCATE then only cuts the file
                run(.truncate)
            }
        }
    }

    private func run(_ mode: Connection.CheckpointMode) {
        // A failed checkpoint (I/O error) loses nothing: the frames stay in the WAL, and the
        // next checkpoint (or the writer's close) copies them.
        guard let result = try? connection.checkpoint(mode) else { return }
        // A PASSIVE checkpoint that does not reach the WAL's end copies pages without syncing
        // the database file (SQLite syncs it only when the whole WAL is copied, before the
        // WAL may restart). Left alone, the writer's finishing checkpoint would then flush up
        // to `restartAt` dirty pages in its one fsync while commits wait. Syncing here, on
        // this thread, leaves it only its own few pages. (fdatasync on any descriptor of the
        // file flushes the file's dirty pages.)
        if mode == .passive, result.backfilled > 0, databaseFile >= 0 { _ = fdatasync(databaseFile) }
        lock.withLock {
            if mode == .truncate {
                frames = 0
                backfilled = 0
            } else {
                backfilled = result.backfilled
            }
        }
        stats.withLock {
            if mode == .truncate { $0.truncated += 1 } else { $0.passive += 1 }
        }
    }
}

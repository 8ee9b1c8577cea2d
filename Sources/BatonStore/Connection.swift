import BatonCore
import BatonStorage
import CBatchedWAL
import CSQLite
import Glibc

/// One SQLite connection, used by one thread at a time: the writer's, or a reader checked
/// out of the pool. Statements are prepared once and cached by their SQL.
package final class Connection {
    /// How a connection is opened.
    package struct Options: Sendable {
        /// Create the file when missing (the server); the admin CLI requires it to exist.
        package var create = true
        /// Readers refuse writes (`PRAGMA query_only`).
        package var readOnly = false
        /// Open the file itself read-only (`SQLITE_OPEN_READONLY`): admin commands that only
        /// read, so they work on a 0444 backup copy, in a read-only directory too.
        package var readOnlyFile = false
        /// How long to wait for another process's lock (the admin CLI shares the file).
        package var busyTimeout: Duration = .seconds(5)
        /// `PRAGMA synchronous`. Always `.full` in Baton; `.normal` only for baton-crash's
        /// mutant, which shows that its power cuts find the acknowledged commits it loses.
        package var synchronous = Synchronous.full
        package init() {}
    }

    /// SQLite's `PRAGMA synchronous` levels a connection may be opened with.
    package enum Synchronous: String, Sendable {
        /// The WAL is synced before each commit returns: a commit survives a power cut.
        case full = "FULL"
        /// The WAL is synced only at checkpoints: the last commits may be lost to a power cut.
        case normal = "NORMAL"
    }

    /// The page size of a database this connection creates (`PRAGMA page_size`, which only
    /// takes effect before the file's first write; switching to WAL is one): 2048 bytes, half of
    /// SQLite's default. An exchange changes a few small rows on pages far apart (its chain's
    /// row, its lineage row, its entry in the audit's chain index), and every changed page goes
    /// whole into the WAL and through `fdatasync`; half the bytes per exchange gave a few
    /// per cent more exchanges a second (docs/benchmarks.md, "Smaller pages"). A database made before
    /// keeps its page size: in WAL mode SQLite cannot change it.
    package static let newDatabasePageSize = 2048

    /// The file this connection opened.
    package let path: String
    private var handle: OpaquePointer?
    private var cache: [String: Statement] = [:]
    /// The statement looked up last. A reader runs the same query over and over (verify's
    /// chain lookup), and comparing the same `String` again is a pointer check, where a
    /// dictionary lookup hashes all of its ~300 bytes.
    private var lastStatement: (sql: String, statement: Statement)?
    /// Frames in the WAL after this connection's last commit, once `disableAutomaticCheckpoints()` was called.
    private(set) var walFrames = 0
    /// Commits that wrote WAL frames, once `disableAutomaticCheckpoints()` was called (SQLite
    /// calls the WAL hook exactly then).
    private(set) var framedCommits = 0
    /// Audit events written in the open transaction; the writer reports them once committed.
    var uncommittedEvents: [AuditEvent] = []
    /// Ids of `chains` rows inserted, updated or deleted since last cleared, once
    /// `observeRowChanges()` was called (SQLite's update hook).
    var changedChains: [Int64] = []
    /// Whether a `users` row was inserted, updated or deleted since last cleared (same hook).
    var changedUsers = false

    /// Opens `path` in WAL mode with `synchronous=FULL` and foreign keys on; a read-only file
    /// as it is (a read-only directory that cannot hold the -shm file: as immutable).
    /// - Throws: `SQLiteError` if the file cannot be opened or configured; the handle is closed.
    package init(path: String, options: Options = Options()) throws(SQLiteError) {
        self.path = path
        if options.readOnlyFile {
            do {
                handle = try Self.open(path, flags: SQLITE_OPEN_READONLY)
                // The first read maps the WAL index (-shm), which a read-only directory may not
                // let SQLite create: probe now, and fall back to `immutable=1`, which reads the
                // main file alone ("SQLite assumes the file cannot be changed", uri.html).
                try execute("SELECT count(*) FROM sqlite_master")
            } catch where [SQLITE_CANTOPEN, SQLITE_READONLY].contains(error.primaryCode) && !Self.hasWriteAheadLog(path) {
                // Only without a WAL: immutable ignores the -wal file, and with one that would
                // silently show old data. With one, the error stands (it names the cause).
                close()
                handle = try Self.open("file:" + Self.uriEscaped(path) + "?immutable=1", flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
            }
            sqlite3_busy_timeout(handle, Int32(clamping: options.busyTimeout.wholeMilliseconds))
            return
        }
        var flags = SQLITE_OPEN_READWRITE
        if options.create { flags |= SQLITE_OPEN_CREATE }
        // The WAL in one write per commit (CBatchedWAL): safe only where every commit syncs the
        // WAL before SQLite publishes it to other connections, which synchronous=FULL does.
        let db = try Self.open(path, flags: flags, vfs: options.synchronous == .full ? Self.batchedWALVFS : nil)
        handle = db
        do {
            sqlite3_busy_timeout(db, Int32(clamping: options.busyTimeout.wholeMilliseconds))
            // WAL: readers never block the writer nor wait for it. synchronous=FULL: in WAL
            // mode "the WAL file is synchronized before each transaction commit", so a
            // commit that returned survives power loss, not just a process crash.
            // A no-op on a database that has pages already: it keeps the size it was made with.
            if !options.readOnly { try execute("PRAGMA page_size = \(Self.newDatabasePageSize)") }
            try execute("PRAGMA journal_mode = WAL")
            try execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
            try execute("PRAGMA foreign_keys = ON")
            if options.readOnly { try execute("PRAGMA query_only = 1") }
        } catch {
            close()
            throw error
        }
    }

    /// The writes SQLite made to this connection's WAL and the writes that reached the file
    /// (`CBatchedWAL` keeps a commit's frames and writes them at its sync) since the WAL was
    /// opened, and the bytes kept now; nil when the WAL is not open and buffered through that
    /// VFS. For tests.
    package var walWrites: (made: Int, passedOn: Int, buffered: Int)? {
        var made: Int64 = 0, passedOn: Int64 = 0, buffered: Int32 = 0
        guard batched_wal_counts(handle, &made, &passedOn, &buffered) == 1 else { return nil }
        return (Int(made), Int(passedOn), Int(buffered))
    }

    /// Copies this connection's database, as of one consistent snapshot (SQLite's online
    /// backup: the server may write meanwhile), into a new file at `path`, synced. The caller
    /// gives it its final name (`DurableFile.publish`).
    package func backup(into path: String) throws(SQLiteError) {
        var destination: OpaquePointer?
        let opened = sqlite3_open_v2(path, &destination, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE, nil)
        guard opened == SQLITE_OK, let destination else {
            let message = destination.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            sqlite3_close_v2(destination)
            throw SQLiteError(code: opened, message: message)
        }
        defer { sqlite3_close_v2(destination) }
        sqlite3_exec(destination, "PRAGMA synchronous = FULL", nil, nil, nil)
        guard let backup = sqlite3_backup_init(destination, "main", handle, "main") else {
            throw SQLiteError(code: sqlite3_extended_errcode(destination), message: String(cString: sqlite3_errmsg(destination)))
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw SQLiteError(code: stepped == SQLITE_DONE ? finished : stepped, message: String(cString: sqlite3_errmsg(destination)))
        }
        // One self-contained file: no -wal or -shm beside it (a server opening it turns WAL back on).
        guard sqlite3_exec(destination, "PRAGMA journal_mode = DELETE", nil, nil, nil) == SQLITE_OK else {
            throw SQLiteError(code: sqlite3_extended_errcode(destination), message: String(cString: sqlite3_errmsg(destination)))
        }
    }

    /// The batched-WAL VFS's name, once registered (on top of the default VFS of that moment);
    /// nil if SQLite refused it, and the default VFS is used.
    private static let batchedWALVFS: String? = batched_wal_register() == SQLITE_OK ? BATCHED_WAL_VFS_NAME : nil

    private static func open(_ path: String, flags: Int32, vfs: String? = nil) throws(SQLiteError) -> OpaquePointer {
        var db: OpaquePointer?
        let code = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, vfs)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open database"
            sqlite3_close_v2(db)  // "Whether or not an error occurs when it is opened, resources associated
            throw SQLiteError(code: code, message: message)  // with the handle should be released"
        }
        return db
    }

    /// Whether `path`'s -wal file exists and holds frames.
    private static func hasWriteAheadLog(_ path: String) -> Bool {
        var info = stat()
        return stat(path + "-wal", &info) == 0 && info.st_size > 0
    }

    /// `path` with the characters a URI filename gives meaning to percent-encoded.
    private static func uriEscaped(_ path: String) -> String {
        path.utf8.map { byte in
            [UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(byte) ? "%" + String(byte, radix: 16, uppercase: true)
                : String(decoding: [byte], as: UTF8.self)
        }.joined()
    }

    deinit { close() }

    /// The database's page size in bytes (`PRAGMA page_size`).
    package func pageSize() throws(SQLiteError) -> Int {
        Int(try statement("PRAGMA page_size").first { $0.int(0) } ?? 4096)
    }

    /// Finalizes cached statements, then closes the handle.
    package func close() {
        lastStatement = nil
        cache.removeAll()
        if let handle {
            sqlite3_wal_hook(handle, nil, nil)  // the hooks' context is this object
            sqlite3_update_hook(handle, nil, nil)
            sqlite3_close_v2(handle)
        }
        handle = nil
    }

    /// How long the next statements wait for a lock another connection holds (then SQLITE_BUSY);
    /// zero or less: they do not wait.
    package func setBusyTimeout(_ timeout: Duration) {
        if let handle { sqlite3_busy_timeout(handle, Int32(clamping: max(0, timeout.wholeMilliseconds))) }
    }

    /// Runs one or more statements with no parameters (schema, pragmas, BEGIN/COMMIT).
    package func execute(_ sql: String) throws(SQLiteError) {
        let db = try open()
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(message)
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: text, sql: sql)
        }
    }

    /// The cached prepared statement for `sql`.
    package func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let last = lastStatement, last.sql == sql { return last.statement }
        let statement: Statement
        if let cached = cache[sql] {
            statement = cached
        } else {
            statement = try Statement(database: try open(), sql: sql)
            cache[sql] = statement
        }
        lastStatement = (sql, statement)
        return statement
    }

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT`; rolls back and rethrows on the first error.
    package func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            rollback()
            throw error
        }
    }

    /// Rolls back the open transaction, if any.
    package func rollback() {
        if let handle, sqlite3_get_autocommit(handle) == 0 { _ = try? execute("ROLLBACK") }
    }

    /// Turns SQLite's automatic checkpoint off on this connection, so that a `COMMIT` never
    /// copies the WAL into the database file, and records the WAL's length after each commit
    /// in `walFrames` instead. (`sqlite3_wal_autocheckpoint` is "a wrapper around
    /// `sqlite3_wal_hook()`": installing a hook replaces it, and `PRAGMA wal_autocheckpoint`
    /// then reads 0.) The writer calls this; `Checkpointer` does the copying.
    package func disableAutomaticCheckpoints() throws(SQLiteError) {
        let db = try open()
        sqlite3_wal_hook(db, { context, _, _, frames in
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            connection.walFrames = Int(frames)
            connection.framedCommits += 1
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The first region of the WAL index as SQLite itself maps it (the VFS's `xShmMap`, with
    /// no extension): valid until this connection closes; nil when there is none. Opening the
    /// -shm file again would be wrong: closing any descriptor of a file drops every POSIX
    /// lock the process holds on it, SQLite's included.
    func walIndexMapping() -> UnsafeRawPointer? {
        guard let handle else { return nil }
        // A read maps the WAL index if nothing has yet.
        _ = try? execute("SELECT 1 FROM sqlite_master LIMIT 1")
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2,
              let map = methods.pointee.xShmMap else { return nil }
        var region: UnsafeMutableRawPointer?
        guard map(file, 0, 32768, 0, &region) == SQLITE_OK, let region else { return nil }
        return UnsafeRawPointer(region)
    }

    /// Records in `changedChains` and `changedUsers` every row of `chains` and `users` this
    /// connection writes (`sqlite3_update_hook`; both are rowid tables, and nothing deletes
    /// from them without a WHERE, which the hook would not see). The writer's `HeadMemory`
    /// forgets those rows before the commit is acknowledged.
    func observeRowChanges() throws(SQLiteError) {
        let db = try open()
        sqlite3_update_hook(db, { context, _, _, table, rowid in
            guard let table else { return }
            let connection = Unmanaged<Connection>.fromOpaque(context!).takeUnretainedValue()
            if strcmp(table, "chains") == 0 {
                connection.changedChains.append(rowid)
            } else if strcmp(table, "users") == 0 {
                connection.changedUsers = true
            }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// How a checkpoint may treat the writer and readers (`sqlite3_wal_checkpoint_v2`).
    package enum CheckpointMode {
        /// Copies what it can without waiting for any lock; never blocks the writer.
        case passive
        /// Copies everything, then truncates the WAL to zero bytes. Takes the write lock
        /// (waiting up to the busy timeout); fails as busy when a reader still needs the WAL.
        case truncate
    }

    /// What a checkpoint left: frames in the WAL and frames copied into the database.
    package struct CheckpointResult: Equatable, Sendable {
        package var frames: Int
        package var backfilled: Int
        package var isComplete: Bool { backfilled == frames }
    }

    /// Runs a checkpoint of the main database.
    /// - Returns: nil when SQLite answered `SQLITE_BUSY` (another checkpoint or a lock holder).
    /// - Throws: `SQLiteError` for any other failure (I/O, disk full).
    package func checkpoint(_ mode: CheckpointMode) throws(SQLiteError) -> CheckpointResult? {
        let db = try open()
        var frames: Int32 = 0, backfilled: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(
            db, nil, mode == .passive ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_TRUNCATE, &frames, &backfilled)
        if code == SQLITE_BUSY { return nil }
        guard code == SQLITE_OK else {
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: "checkpoint")
        }
        return CheckpointResult(frames: Int(frames), backfilled: Int(backfilled))
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    package var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    /// The rowid of the last INSERT.
    package var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    private func open() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection is closed") }
        return handle
    }
}

@available(*, unavailable)
extension Connection: Sendable {}

import BatonCore
@testable import BatonStore
import BatonStorage
import Foundation
import Testing

/// The WAL in one write per commit (`CBatchedWAL`, docs/design.md): what SQLite writes as two
/// writes per page reaches the file as one write per commit, and every other connection, and
/// the file after a close, sees exactly what was committed.
struct BatchedWALTests {
    /// Rows, bytes and three rows' contents of `table` (rows `n` 1, the middle one and `rows`),
    /// as `connection` reads them: what a reader compares with what was committed.
    static func contents(of table: String, rows: Int, on connection: Connection) throws -> String? {
        try connection.statement("""
            SELECT count(*), sum(length(bytes)), (SELECT group_concat(hex(bytes)) FROM \(table) WHERE n IN (1, \(rows / 2), \(rows))) FROM \(table)
            """).first { "\($0.int(0)) \($0.int(1)) \($0.text(2))" }
    }

    /// One commit of about 600 KiB: more than SQLite's unix VFS takes in one write (it keeps the
    /// low 17 bits of a length, so 128 KiB would be written as nothing and reported as a full
    /// disk), so the buffer goes out in several writes, each far larger than a frame.
    @Test func aLargeCommitReachesTheFileInFewWritesAndReadsBackWhole() throws {
        let directory = try TestDirectories.make()
        defer { TestDirectories.remove(directory) }
        let path = directory + "/wal.db"
        let writer = try Connection(path: path)
        try writer.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
        let before = try #require(writer.walWrites)
        try writer.execute("""
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            INSERT INTO filler SELECT i, randomblob(2016) FROM n;
            COMMIT;
            """)
        let after = try #require(writer.walWrites)
        let made = after.made - before.made, passedOn = after.passedOn - before.passedOn
        #expect(made >= 600)  // two writes per page, 300 pages and more
        #expect(passedOn >= 5 && passedOn <= 8)  // about 620 KiB in writes of 124 KiB
        // Another connection sees the commit at once, and a reopened file has it all.
        let reader = try Connection(path: path, options: { var options = Connection.Options(); options.readOnly = true; return options }())
        let written = try Self.contents(of: "filler", rows: 300, on: writer)
        #expect(written?.hasPrefix("300 604800 ") == true)
        #expect(try Self.contents(of: "filler", rows: 300, on: reader) == written)
        reader.close()
        writer.close()
        let reopened = try Connection(path: path)
        defer { reopened.close() }
        #expect(try reopened.statement("PRAGMA integrity_check").first { $0.text(0) } == "ok")
        #expect(try Self.contents(of: "filler", rows: 300, on: reopened) == written)
    }

    /// A transaction too large for its page cache spills frames into the WAL before it commits
    /// (kept in the buffer); rolled back, it releases the write lock. Another connection then
    /// commits frames at the same offsets. The first connection's later reads and its close
    /// must not write the rolled-back frames over the committed ones. (A review found that the
    /// first version could: nothing wrote the buffer out before the lock was released. This
    /// test passed on it all the same, since SQLite's rollback happened to read the WAL, which
    /// wrote the buffer out; the release of the lock now does, whatever the rollback reads.)
    @Test func framesOfARolledBackTransactionNeverOverwriteAnotherConnectionsCommit() throws {
        let directory = try TestDirectories.make()
        defer { TestDirectories.remove(directory) }
        let path = directory + "/spill.db"
        let first = try Connection(path: path)
        try first.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, bytes BLOB NOT NULL); CREATE TABLE kept (n INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
        try first.execute("PRAGMA cache_size = 16")  // pages: spills within the transaction below
        let before = try #require(first.walWrites)
        try first.execute("""
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
            INSERT INTO filler SELECT i, randomblob(1500) FROM n;
            """)
        let spilled = try #require(first.walWrites)
        #expect(spilled.made > before.made)  // frames written before any commit: the spill
        #expect(spilled.buffered > 0)
        try first.execute("ROLLBACK")
        #expect(first.walWrites?.buffered == 0)  // out before the write lock was released
        let second = try Connection(path: path)
        try second.execute("""
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
            INSERT INTO kept SELECT i, randomblob(1500) FROM n;
            COMMIT;
            """)
        let committed = try Self.contents(of: "kept", rows: 100, on: second)
        #expect(committed?.hasPrefix("100 150000 ") == true)
        // The first connection reads, then closes (each used to write out what it kept).
        #expect(try Self.contents(of: "kept", rows: 100, on: first) == committed)
        first.close()
        #expect(try Self.contents(of: "kept", rows: 100, on: second) == committed)
        second.close()
        let reopened = try Connection(path: path)
        defer { reopened.close() }
        #expect(try reopened.statement("PRAGMA integrity_check").first { $0.text(0) } == "ok")
        #expect(try Self.contents(of: "kept", rows: 100, on: reopened) == committed)
    }

    /// The store's exchanges: each commit's frames (about three pages, each a header and a page)
    /// reach the WAL in one write.
    @Test func eachExchangeCommitIsOneWrite() throws {
        let db = try TemporaryDatabase()
        var token = try db.login(device: "device-1").token
        let before = try #require(try db.store.writer.write { connection throws(SQLiteError) in connection.walWrites })
        let exchanges = 20
        for _ in 0..<exchanges { token = try db.store.exchange(token, context: RequestContext(ip: "192.0.2.10", userAgent: "TestApp/1.0")).token }
        let after = try #require(try db.store.writer.write { connection throws(SQLiteError) in connection.walWrites })
        // One commit each, and one more for each `write` that read the counts.
        #expect(after.passedOn - before.passedOn <= exchanges + 2)
        #expect(after.made - before.made >= 4 * exchanges)
    }

    /// Only a connection that syncs every commit before SQLite publishes it may keep frames
    /// back (synchronous=FULL); baton-crash's NORMAL mutant writes through.
    @Test func aConnectionThatDoesNotSyncEachCommitWritesThrough() throws {
        let directory = try TestDirectories.make()
        defer { TestDirectories.remove(directory) }
        var options = Connection.Options()
        options.synchronous = .normal
        let normal = try Connection(path: directory + "/normal.db", options: options)
        defer { normal.close() }
        try normal.execute("CREATE TABLE t (x)")
        #expect(normal.walWrites == nil)
        let full = try Connection(path: directory + "/full.db")
        defer { full.close() }
        try full.execute("CREATE TABLE t (x)")
        #expect(full.walWrites != nil)
    }
}

@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Foundation
import Synchronization
import Testing

/// `HeadMemory` inside one process, on the store itself: what it remembers, and the changes
/// that must make it read again (docs/design.md, "Verify from memory"). The races against a
/// real server are `VerifyFromMemoryTests` (BatonServerTests).
struct HeadMemoryTests {
    /// Verifies `token` until the store answers it from memory: the first verify reads,
    /// queues the presented mark and remembers the row as marked; a write (the readiness
    /// probe) commits the mark; the next verify answers from memory.
    func warm(_ database: TemporaryDatabase, _ bundle: TokenBundle) throws {
        _ = try database.store.verify(bundle.token)
        #expect(database.store.isWritable())
        _ = try database.store.verify(bundle.token)
    }

    func isRemembered(_ database: TemporaryDatabase, _ chain: ChainID) -> Bool {
        if case .remembered = database.store.writer.memory?.recall(chain) { return true }
        return false
    }

    @Test func aPresentedHeadIsAnsweredFromMemoryAndAnExchangeForgetsIt() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        try warm(database, bundle)
        #expect(isRemembered(database, bundle.chainID))
        let next = try database.store.exchange(bundle.token)
        #expect(!isRemembered(database, bundle.chainID))
        #expect(batonError { _ = try database.store.verify(bundle.token) } != nil)
        #expect(try database.store.verify(next.token).chainID == bundle.chainID)
    }

    /// A write on another connection (here in the same process; `baton admin` and the sqlite3
    /// shell are the other processes of VerifyFromMemoryTests) is seen by the next verify.
    @Test func aWriteOnAnotherConnectionIsSeenByTheNextVerify() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        try warm(database, bundle)
        #expect(isRemembered(database, bundle.chainID))
        let other = try Connection(path: database.path)
        defer { other.close() }
        try other.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'admin'")
        #expect(!isRemembered(database, bundle.chainID))
        #expect(batonError { _ = try database.store.verify(bundle.token) } == .chainRevoked(.admin))
    }

    /// A checkpoint that restarts the WAL changes the WAL index header but no row: verify
    /// stays correct across it, and the writer takes the new header without forgetting.
    @Test func aCheckpointThatRestartsTheWALKeepsVerifyCorrect() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        try warm(database, bundle)
        let other = try Connection(path: database.path)
        defer { other.close() }
        try other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(try database.store.verify(bundle.token).chainID == bundle.chainID)
        #expect(database.store.isWritable())  // the writer learns the restarted header
        #expect(isRemembered(database, bundle.chainID))
        let next = try database.store.exchange(bundle.token)
        #expect(batonError { _ = try database.store.verify(bundle.token) } != nil)
        #expect(try database.store.verify(next.token).chainID == bundle.chainID)
    }

    /// A users row written by this process (disabling the user) forgets every row.
    @Test func disablingTheUserForgetsEveryRememberedRow() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        try warm(database, bundle)
        #expect(isRemembered(database, bundle.chainID))
        // The closure takes the time, not the database: in the full run this test's database
        // outlived the test (removed at exit by TestDirectories, in two clean-clone runs), and
        // the closure was the one reference to it handed to another thread (the writer's).
        let now = database.clock.now()
        try database.store.write { transaction throws(SQLiteError) in
            _ = try transaction.setDisabled(1, true, now: now)
        }
        #expect(!isRemembered(database, bundle.chainID))
    }

    /// The first verify of a head reads it, queues the presented mark and remembers the row as
    /// marked; the mark's commit is not a change of the row for the memory, so the second
    /// verify answers from memory (before, the mark stamped the chain and every head was read
    /// twice). The mark itself is written.
    @Test func theFirstVerifysRowStaysRememberedAcrossItsMark() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        _ = try database.store.verify(bundle.token)
        #expect(database.store.isWritable())  // a write after the queued mark: the mark is committed
        #expect(isRemembered(database, bundle.chainID))
        let marked = try database.store.read { transaction throws(SQLiteError) in
            try transaction.chain(bundle.chainID, forUpdate: false)?.head.presented
        }
        #expect(marked == true)
    }

    /// One table for every thread: a row read on one thread is answered from memory on another.
    @Test func aRowReadOnOneThreadIsRecalledOnAnother() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        try warm(database, bundle)
        let memory = try #require(database.store.writer.memory)
        let chain = bundle.chainID
        let recalledElsewhere = Mutex<Bool?>(nil)
        let thread = Thread {
            let recalled = if case .remembered = memory.recall(chain) { true } else { false }
            recalledElsewhere.withLock { $0 = recalled }
        }
        thread.start()
        while recalledElsewhere.withLock({ $0 }) == nil { usleep(1000) }
        #expect(recalledElsewhere.withLock { $0 } == true)
    }

    /// A live set larger than the table: it holds at most its rows, keeps part of the set
    /// (a pseudo-random slot of a full bucket is given up, so the order of use cannot make it
    /// keep nothing), and every session still verifies, from the database when forgotten.
    @Test func aFullTableHoldsAtMostItsRowsAndEverySessionStillVerifies() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        var options = TokenStore.Options()
        options.rememberedRows = 16
        let database = try TemporaryDatabase(policy: policy, options: options)
        let memory = try #require(database.store.writer.memory)
        #expect(memory.table.capacity == 16)
        let bundles = try (0..<64).map { try database.login(device: "phone-\($0)") }
        for _ in 0..<2 {
            for bundle in bundles { try warm(database, bundle) }
        }
        #expect(memory.table.count <= 16)
        #expect(bundles.filter { isRemembered(database, $0.chainID) }.count >= 4, "a part of the set stays")
        for bundle in bundles { #expect(try database.store.verify(bundle.token).chainID == bundle.chainID) }
    }
}

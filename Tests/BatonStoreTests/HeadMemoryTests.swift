@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Foundation
import Testing

/// `HeadMemory` inside one process, on the store itself: what it remembers, and the changes
/// that must make it read again (docs/design.md, "Verify from memory"). The races against a
/// real server are `VerifyFromMemoryTests` (BatonServerTests).
struct HeadMemoryTests {
    /// Verifies `token` until the store answers it from memory: the first verify reads and
    /// queues the presented mark; a write (the readiness probe) commits the mark; the next
    /// verify reads the marked row and remembers it.
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
        try database.store.write { transaction throws(SQLiteError) in
            _ = try transaction.setDisabled(1, true, now: database.clock.now())
        }
        #expect(!isRemembered(database, bundle.chainID))
    }

    /// A full table forgets its older half, not everything (the first version started over,
    /// so a live set larger than the bound, verified round-robin, was never answered from
    /// memory); a row recalled from the older half moves to the newer and stays; a forgotten
    /// row still verifies, from the database.
    @Test func aFullTableForgetsItsOlderHalfAndARecalledRowStays() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        var options = TokenStore.Options()
        options.rememberedRowsPerThread = 16
        let database = try TemporaryDatabase(policy: policy, options: options)
        let memory = try #require(database.store.writer.memory)
        /// This thread's table, looked at without moving a row (`recall` would).
        func held() -> Set<Int> {
            let table = memory.currentTable()
            return Set(bundles.indices.filter { table.contains(bundles[$0].chainID) })
        }
        let bundles = try (0..<17).map { try database.login(device: "phone-\($0)") }
        for bundle in bundles.prefix(16) { try warm(database, bundle) }
        #expect(held() == Set(0..<16), "two halves of 8")
        try warm(database, bundles[16])
        #expect(held() == Set(8..<17), "the older half (0-7) went whole")
        #expect(isRemembered(database, bundles[8].chainID))  // recalled: moves to the newer half
        for index in 0..<6 { try warm(database, bundles[index]) }  // the newer half is full: 16, 8, 0-5
        try warm(database, bundles[6])
        #expect(held() == Set([16, 8, 0, 1, 2, 3, 4, 5, 6]), "9-15 went; 8, recalled, stayed")
        #expect(memory.currentTable().count <= 16)
        for bundle in bundles { #expect(try database.store.verify(bundle.token).chainID == bundle.chainID) }
    }
}

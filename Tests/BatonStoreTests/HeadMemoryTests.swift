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

    /// A full table forgets an eighth of its rows to make room, not all of them (the first
    /// version started over, so a live set larger than the bound, verified round-robin, was
    /// never answered from memory), and a forgotten row still verifies, from the database.
    @Test func aFullTableForgetsAnEighthAndItsRowsStillVerify() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        var options = TokenStore.Options()
        options.rememberedRowsPerThread = 16
        let database = try TemporaryDatabase(policy: policy, options: options)
        let bundles = try (0..<17).map { try database.login(device: "phone-\($0)") }
        for bundle in bundles.prefix(16) { try warm(database, bundle) }
        #expect(bundles.prefix(16).allSatisfy { isRemembered(database, $0.chainID) })
        try warm(database, bundles[16])
        #expect(isRemembered(database, bundles[16].chainID))
        let kept = bundles.prefix(16).filter { isRemembered(database, $0.chainID) }.count
        #expect(kept == 14, "16 rows, an eighth (2) forgotten for the 17th")
        for bundle in bundles { #expect(try database.store.verify(bundle.token).chainID == bundle.chainID) }
    }
}

@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Synchronization
import Testing

/// Group commit under real threads on a real SQLite file. The exchange races on one token
/// run against both stores in BackendRaceTests.
@Suite(.serialized)
struct ConcurrencyTests {
    @Test func concurrentExchangesShareCommits() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let db = try TemporaryDatabase(policy: policy, clock: SystemClock())
        let heads = Mutex(try (0..<64).map { try db.login(device: "d\($0)").token })
        let store = db.store
        let before = store.commitStatistics
        race(threads: 64) { index in
            for _ in 0..<10 {
                let token = heads.withLock { $0[index] }
                if let next = try? store.exchange(token) { heads.withLock { $0[index] = next.token } }
            }
        }
        let after = db.store.commitStatistics
        #expect(after.writes - before.writes == 640)
        #expect(after.batches - before.batches < 640)
        #expect(after.largestBatch > 1)
        for token in heads.withLock({ $0 }) { #expect(try db.store.verify(token).chainID.rawValue > 0) }
    }
}

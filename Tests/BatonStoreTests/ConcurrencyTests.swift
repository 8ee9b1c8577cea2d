@testable import BatonCore
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Synchronization
import Testing

/// Exchanges on many chains from real threads at once, on both stores: every one commits and
/// every chain's last head verifies. On SQLite they also share commits (group commit: fewer
/// transactions than writes); that count is SQLite's writer's mechanics and is checked there
/// only. The exchange races on one token run against both stores in BackendRaceTests.
@Suite(.serialized)
struct ConcurrencyTests {
    @Test(arguments: Backend.allCases)
    func concurrentExchangesOnDistinctChainsAllCommit(_ backend: Backend) async throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let db = try await BackendDatabase(backend, policy: policy, clock: SystemClock(), hashing: .cheap)
        let heads = Mutex(try await offPool { try (0..<64).map { try db.login(device: "d\($0)") } })
        let store = db.store
        let writer = store.base as? TokenStore
        let before = writer?.commitStatistics
        let failures = Mutex<[BatonError]>([])
        try await offPool {
            race(threads: 64) { index in
                for _ in 0..<10 {
                    let head = heads.withLock { $0[index] }
                    do throws(BatonError) {
                        let next = try store.exchange(head.token)
                        heads.withLock { $0[index] = next }
                    } catch { failures.withLock { $0.append(error) } }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try db.auditEvents(kind: .exchanged).count == 640)
        for head in heads.withLock({ $0 }) {
            #expect(head.generation == 10)
            #expect(try db.store.verify(head.token).chainID == head.chainID)
        }
        if let writer, let before {
            let after = writer.commitStatistics
            #expect(after.writes - before.writes == 640)
            #expect(after.batches - before.batches < 640)
            #expect(after.largestBatch > 1)
        }
    }
}

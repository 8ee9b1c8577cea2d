@testable import BatonCore
import BatonStorage
import BatonTestSupport
import Synchronization
import Testing

/// The admin operations under concurrency, on both stores: an operator's changes and logins of
/// the same user never deadlock (on PostgreSQL every operation locks the user's row before its
/// chains'), and pruners running at once delete each ended chain exactly once.
@Suite(.serialized)
struct AdminStoreTests {
    /// A smoke test: deadlocks here are rare even with a wrong lock order (logins spend their
    /// time hashing, outside any transaction), but any deadlock or lock timeout fails it.
    @Test(arguments: Backend.allCases)
    func operatorChangesAndLoginsOfOneUserNeverDeadlock(_ backend: Backend) async throws {
        var policy = Policy()
        policy.maxChainsPerUser = 2  // logins revoke (R7) under the user's lock too
        let db = try await BackendDatabase(backend, policy: policy, clock: SystemClock())
        _ = try await offPool { try db.login() }
        let admin = db.admin, store = db.store
        let outcomes = Mutex<(logins: Int, unavailable: [String])>((0, []))
        try await offPool {
            race(threads: 8) { index in
                for round in 0..<8 {
                    do throws(BatonError) {
                        switch index % 4 {
                        case 0, 1:
                            _ = try store.login(LoginRequest(username: "alice", password: "correct horse battery", deviceID: "d\(index)-\(round)"))
                            outcomes.withLock { $0.logins += 1 }
                        case 2 where round.isMultiple(of: 2):
                            _ = try admin.changePassword("alice", to: "correct horse battery", context: .admin)
                        case 2:
                            _ = try admin.revokeChains(ofUser: "alice", note: "race", context: .admin)
                        default:
                            _ = try admin.revokeAllChains(note: "race", context: .admin, batchSize: 2)
                        }
                    } catch .unavailable(let why) where !why.hasPrefix("too many password checks") {
                        outcomes.withLock { $0.unavailable.append(why) }  // a deadlock or lock timeout
                    } catch {}  // refusals (disabled, throttled, the hasher's queue full on a busy machine)
                }
            }
        }
        let (logins, unavailable) = outcomes.withLock { $0 }
        #expect(unavailable.isEmpty, "\(unavailable)")
        #expect(logins > 0)
    }

    /// The self-service change locks the user's row, then the chains: it still revokes the
    /// user's other chains, and keeps the presenting one.
    @Test(arguments: Backend.allCases)
    func selfServicePasswordChangeRevokesTheOtherChains(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let phone = try db.login(device: "phone-1"), laptop = try db.login(device: "laptop")
            let change = try db.store.base.changePassword(presentedBy: phone.token, current: "correct horse battery",
                                                          new: "a brand new password", context: RequestContext())
            #expect(change.revokedChains == [laptop.chainID])
            #expect(batonError { _ = try db.store.verify(laptop.token) } == .chainRevoked(.passwordChanged))
            #expect(try db.store.verify(phone.token).chainID == phone.chainID)
        }
    }

    @Test(arguments: Backend.allCases)
    func twoPrunersAtOnceDeleteEachEndedChainOnce(_ backend: Backend) async throws {
        let policy = { var policy = Policy(); policy.maxChainsPerUser = 0; return policy }()
        let db = try await BackendDatabase(backend, policy: policy)
        let chains = 30
        let other = try await offPool { () throws -> any AdminStore in
            for index in 0..<chains { try db.store.logout(try db.login(device: "d\(index)").token) }
            return try db.anotherStore(policy: policy)
        }
        defer { other.close() }
        db.clock.advance(by: .seconds(60))
        let results = Mutex<[Result<PruneResult, BatonError>]>([])
        let pruners = [db.admin, other]
        try await offPool {
            race(threads: 2) { index in
                let result: Result<PruneResult, BatonError>
                do throws(BatonError) {
                    result = .success(try pruners[index].prune(olderThan: .seconds(1), includeSecurityEvents: false, dryRun: false, batchSize: 4))
                } catch { result = .failure(error) }
                results.withLock { $0.append(result) }
            }
        }
        var total = PruneResult()
        for result in results.withLock({ $0 }) {
            switch result {
            case .success(let pruned): total.add(pruned)
            case .failure(let error): Issue.record("prune failed: \(error)")
            }
        }
        // Each chain had login_succeeded and chain_revoked (logout): not evidence.
        #expect(total.chains == chains && total.auditEvents == 2 * chains && total.lineageRows == 0 && total.keptChains == 0)
        let left = try await offPool { try db.admin.prune(olderThan: .seconds(1), includeSecurityEvents: true, dryRun: true, batchSize: 500) }
        #expect(left == PruneResult())
    }
}

@testable import BatonCore
import BatonStorage
import BatonTestSupport
import Synchronization
import Testing

/// Several instances (or one instance's threads) change one user's chains at once. On
/// PostgreSQL each does so under row locks: every operation that locks several rows takes the
/// user's row first, then the chains, so two of them never wait on each other in a cycle; a
/// deadlock would be broken by PostgreSQL and answered 503, which no client should ever see
/// for this. On SQLite the single writer serializes them, so the same races pass trivially:
/// the contract is the same on both, never a 503 and never a deadlock.
@Suite(.serialized)
struct LockOrderTests {
    static let rounds = 25

    /// A database whose password work never serializes the racers (cheap argon2id, many
    /// slots), so that their transactions overlap. `maxChainsPerUser` above 0 makes every
    /// login lock the user's live chains (R7).
    static func database(_ backend: Backend, maxChainsPerUser: Int = 0) async throws -> BackendDatabase {
        var policy = Policy()
        policy.maxChainsPerUser = maxChainsPerUser
        return try await BackendDatabase(backend, policy: policy, clock: SystemClock(), hashing: .cheap)
    }

    static func login(_ store: StoreHandle, _ device: String, password: String = "correct horse battery") throws(BatonError) -> TokenBundle {
        try store.login(LoginRequest(username: "alice", password: password, deviceID: device, deviceClass: .mobile))
    }

    /// Two password changes, each presented by another chain of the same user, at the same
    /// moment: one wins (and revokes the other's chain); the other is refused with a 401,
    /// never a 503 from a deadlock.
    @Test(arguments: Backend.allCases)
    func concurrentPasswordChangesOfOneUserNeverDeadlock(_ backend: Backend) async throws {
        let db = try await Self.database(backend)
        let problems = try await offPool { () throws -> [String] in
            let store = db.store
            try store.createUser("alice", password: "correct horse battery")
            var problems: [String] = []
            for round in 0..<Self.rounds {
                let current = round == 0 ? "correct horse battery" : "password of round \(round - 1)"
                let chains = try (0..<2).map { _ in try Self.login(store, "device-\(round)", password: current) }
                let results = Mutex<[Result<PasswordChange, BatonError>]>([])
                race(threads: 2) { index in
                    let result: Result<PasswordChange, BatonError>
                    do throws(BatonError) {
                        result = .success(try store.changePassword(presentedBy: chains[index].token, current: current, new: "password of round \(round)"))
                    } catch { result = .failure(error) }
                    results.withLock { $0.append(result) }
                }
                let outcomes = results.withLock { $0 }
                let winners = outcomes.filter { (try? $0.get()) != nil }.count
                let unavailable = outcomes.filter { if case .failure(.unavailable) = $0 { true } else { false } }
                if winners != 1 || !unavailable.isEmpty { problems.append("round \(round): " + outcomes.map(Self.describe).joined(separator: ", ")) }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// A password change and a login of the same user at the same moment (the login locks the
    /// user, then the user's chains for R7; the change the same, in the same order).
    @Test(arguments: Backend.allCases)
    func passwordChangeRacingALoginNeverDeadlocks(_ backend: Backend) async throws {
        let db = try await Self.database(backend, maxChainsPerUser: 1000)
        let problems = try await offPool { () throws -> [String] in
            let store = db.store
            try store.createUser("alice", password: "correct horse battery")
            var problems: [String] = []
            for round in 0..<Self.rounds {
                let presenting = try Self.login(store, "phone-\(round)")
                _ = try Self.login(store, "tablet-\(round)")
                let errors = Mutex<[BatonError]>([])
                race(threads: 2) { index in
                    do throws(BatonError) {
                        if index == 0 {
                            _ = try store.changePassword(presentedBy: presenting.token, current: "correct horse battery", new: "correct horse battery")
                        } else {
                            _ = try Self.login(store, "laptop-\(round)")
                        }
                    } catch { errors.withLock { $0.append(error) } }
                }
                // The login may lose to the change (its checked hash is no longer current:
                // invalid_credentials); nothing may be a 503.
                let seen = errors.withLock { $0 }
                if seen.contains(where: { if case .unavailable = $0 { true } else { false } }) {
                    problems.append("round \(round): " + seen.map { Self.describe(Result<Void, BatonError>.failure($0)) }.joined(separator: ", "))
                }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// One outcome in a line: "ok", or the error's code (and a 503's explanation).
    static func describe<T>(_ outcome: Result<T, BatonError>) -> String {
        switch outcome {
        case .success: "ok"
        case .failure(.unavailable(let explanation)): "unavailable (\(explanation))"
        case .failure(let error): error.code.rawValue
        }
    }
}

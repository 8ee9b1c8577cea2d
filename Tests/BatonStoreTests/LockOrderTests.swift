@testable import BatonCore
@testable import BatonPostgres
import BatonStorage
import BatonTestSupport
import Synchronization
import Testing

/// On PostgreSQL several instances (or one instance's threads) change one user's chains at
/// once, each under row locks. Every operation that locks several rows takes the user's row
/// first, then the chains, so two of them never wait on each other in a cycle; a deadlock
/// would be broken by PostgreSQL and answered 503, which no client should ever see for this.
@Suite(.serialized)
struct PostgresLockOrderTests {
    static let rounds = 25

    /// A store whose password work never serializes the racers (cheap argon2id, many slots),
    /// so that their transactions overlap.
    /// `maxChainsPerUser` above 0 makes every login lock the user's live chains (R7).
    static func openStore(_ uri: String, maxChainsPerUser: Int = 0) throws -> PostgresStore {
        var options = PostgresStore.Options()
        options.hashConcurrency = 8
        options.hashParameters.memoryKiB = 1024
        options.hashParameters.iterations = 1
        var policy = Policy()
        policy.maxChainsPerUser = maxChainsPerUser
        return try PostgresStore(uri: uri, key: TokenKey.generate(), policy: policy, options: options)
    }

    static func login(_ store: PostgresStore, _ device: String) throws(BatonError) -> TokenBundle {
        try store.login(LoginRequest(username: "alice", password: "correct horse battery", deviceID: device, deviceClass: .mobile))
    }

    /// Two password changes, each presented by another chain of the same user, at the same
    /// moment: one wins (and revokes the other's chain); the other is refused with a 401,
    /// never a 503 from a deadlock.
    @Test func concurrentPasswordChangesOfOneUserNeverDeadlock() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let problems = try await offPool { () throws -> [String] in
            let store = try Self.openStore(uri)
            defer { store.close() }
            try store.createUser("alice", password: "correct horse battery")
            var problems: [String] = []
            for round in 0..<Self.rounds {
                let current = round == 0 ? "correct horse battery" : "password of round \(round - 1)"
                let chains = try (0..<2).map { _ in
                    try store.login(LoginRequest(username: "alice", password: current, deviceID: "device-\(round)", deviceClass: .mobile))
                }
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
    @Test func passwordChangeRacingALoginNeverDeadlocks() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let problems = try await offPool { () throws -> [String] in
            let store = try Self.openStore(uri, maxChainsPerUser: 1000)
            defer { store.close() }
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

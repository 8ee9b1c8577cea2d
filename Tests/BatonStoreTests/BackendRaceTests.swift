@testable import BatonCore
import BatonStorage
import BatonTestSupport
import Synchronization
import Testing

/// The invariant on both stores: 32 threads exchanging one token leave at most one token per
/// chain that verifies, repeated on many chains. On PostgreSQL each racer holds its own pooled
/// connection, so the chain row lock, not the process, is what serializes them.
@Suite(.serialized)
struct BackendRaceTests {
    static let racers = 32

    /// Chains raced on: many on SQLite (cheap), fewer on PostgreSQL (each racer a connection).
    static func chains(_ backend: Backend) -> Int { backend == .sqlite ? 200 : 40 }

    /// Races `racers` threads exchanging `token` as the chain's own device.
    static func raceExchanges(_ store: StoreHandle, _ token: String) -> [Result<TokenBundle, BatonError>] {
        let results = Mutex<[Result<TokenBundle, BatonError>]>([])
        race(threads: racers) { _ in
            let result: Result<TokenBundle, BatonError>
            do throws(BatonError) { result = .success(try store.exchange(token, context: RequestContext(deviceID: "phone-1"))) } catch { result = .failure(error) }
            results.withLock { $0.append(result) }
        }
        return results.withLock { $0 }
    }

    @Test(arguments: Backend.allCases)
    func strictRaceLetsOneExchangeWinAndRevokesOnTheSecond(_ backend: Backend) async throws {
        var policy = Policy()
        policy.retryGrace = .zero
        policy.maxChainsPerUser = 0
        let db = try await BackendDatabase(backend, policy: policy, clock: SystemClock())
        let failuresSeen = try await offPool { () throws -> [String] in
            var problems: [String] = []
            for round in 0..<Self.chains(backend) {
                let login = try db.login()
                let results = Self.raceExchanges(db.store, login.token)
                let winners = results.compactMap { try? $0.get() }
                let failures = results.compactMap { result -> BatonError? in if case .failure(let e) = result { e } else { nil } }
                if winners.count != 1 { problems.append("round \(round): \(winners.count) winners") }
                if !failures.allSatisfy({ $0 == .tokenReused || $0 == .chainRevoked(.reuseDetected) }) { problems.append("round \(round): \(failures)") }
                let verifying = ([login.token] + winners.map(\.token)).filter { (try? db.store.verify($0)) != nil }
                if !verifying.isEmpty { problems.append("round \(round): \(verifying.count) tokens verify after reuse") }
            }
            return problems
        }
        #expect(failuresSeen.isEmpty, "\(failuresSeen)")
        #expect(try db.auditEvents(kind: .exchanged).count == Self.chains(backend))
        #expect(try db.auditEvents(kind: .reuseDetected).count == Self.chains(backend))
    }

    @Test(arguments: Backend.allCases)
    func graceRaceLeavesAtMostOneVerifyingTokenPerChain(_ backend: Backend) async throws {
        var policy = Policy()
        policy.retryGrace = .seconds(10)
        policy.maxChainsPerUser = 0
        let db = try await BackendDatabase(backend, policy: policy, clock: SystemClock())
        let (problems, singleHeads) = try await offPool { () throws -> ([String], Int) in
            var problems: [String] = []
            var singleHeads = 0
            for round in 0..<Self.chains(backend) {
                let login = try db.login()
                let winners = Self.raceExchanges(db.store, login.token).compactMap { try? $0.get() }
                if winners.isEmpty || Set(winners.map(\.generation)) != [1] { problems.append("round \(round): \(winners.map(\.generation))") }
                // Newest first: the surviving head (if any) verifies before a sibling forks the chain.
                let tokens = winners.reversed().map(\.token) + [login.token]
                let verifying = tokens.filter { (try? db.store.verify($0)) != nil }.count
                if verifying > 1 { problems.append("round \(round): \(verifying) tokens verify") }
                if verifying == 1 { singleHeads += 1 }
            }
            return (problems, singleHeads)
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(singleHeads > 0)
    }
}

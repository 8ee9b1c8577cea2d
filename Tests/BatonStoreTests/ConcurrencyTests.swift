@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Synchronization
import Testing

/// The invariant: a chain has at most one token that verify accepts, under any concurrency.
/// Real threads race on a real SQLite file.
@Suite(.serialized)
struct ConcurrencyTests {
    static let racers = 32
    static let rounds = 200

    /// Races `racers` threads exchanging `token`, each as the chain's own device.
    static func raceExchanges(_ store: TokenStore, _ token: String) -> [Result<TokenBundle, BatonError>] {
        let results = Mutex<[Result<TokenBundle, BatonError>]>([])
        race(threads: racers) { _ in
            let result: Result<TokenBundle, BatonError>
            do throws(BatonError) { result = .success(try store.exchange(token, context: RequestContext(deviceID: "phone-1"))) } catch { result = .failure(error) }
            results.withLock { $0.append(result) }
        }
        return results.withLock { $0 }
    }

    static func verifyingCount(_ store: TokenStore, _ tokens: [String]) -> Int {
        tokens.filter { (try? store.verify($0)) != nil }.count
    }

    @Test func strictRaceLetsOneExchangeWinAndRevokesOnTheSecond() throws {
        var policy = Policy()
        policy.retryGrace = .zero
        policy.maxChainsPerUser = 0
        let db = try TemporaryDatabase(policy: policy, clock: SystemClock())
        for round in 0..<Self.rounds {
            let login = try db.login()
            let results = Self.raceExchanges(db.store, login.token)
            let winners = results.compactMap { try? $0.get() }
            let failures = results.compactMap { result -> BatonError? in if case .failure(let e) = result { e } else { nil } }
            #expect(winners.count == 1, "round \(round)")
            #expect(failures.contains(.tokenReused), "round \(round)")
            #expect(failures.allSatisfy { $0 == .tokenReused || $0 == .chainRevoked(.reuseDetected) }, "round \(round): \(failures)")
            #expect(Self.verifyingCount(db.store, [login.token] + winners.map(\.token)) == 0, "round \(round)")
        }
    }

    @Test func graceRaceLeavesAtMostOneVerifyingToken() throws {
        var policy = Policy()
        policy.retryGrace = .seconds(10)
        policy.maxChainsPerUser = 0
        let db = try TemporaryDatabase(policy: policy, clock: SystemClock())
        var singleHeadRounds = 0
        for round in 0..<Self.rounds {
            let login = try db.login()
            let results = Self.raceExchanges(db.store, login.token)
            let winners = results.compactMap { try? $0.get() }
            #expect(!winners.isEmpty, "round \(round)")
            #expect(Set(winners.map(\.generation)) == [1], "round \(round)")
            // Newest first: the surviving head (if any) verifies before a sibling forks the chain.
            let tokens = winners.reversed().map(\.token) + [login.token]
            let verifying = Self.verifyingCount(db.store, tokens)
            #expect(verifying <= 1, "round \(round)")
            if verifying == 1 { singleHeadRounds += 1 }
        }
        #expect(singleHeadRounds > 0)
    }

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

import Foundation
import Glibc
import Synchronization
import Testing

/// Concurrent logins and exchanges while the server is killed with SIGKILL at random moments
/// and restarted on the same database (file or PostgreSQL database), 20 times on each store
/// (BATON_CRASH_KILLS; BATON_CRASH_SEED replays a run). After every kill the database is
/// checked against what clients were acknowledged. On its own threads: the loop blocks
/// (kills, restarts, waits for the clients) throughout.
@Suite(.serialized, .ownThreads)
struct CrashLoopTests {
    /// What the clients share with the test: the port, the acknowledgements, the counts.
    struct Shared {
        var port: UInt16 = 0
        var paused = false
        var stopping = false
        var inRequest = 0
        var acknowledged: [Int64: Acknowledged] = [:]
        var acknowledgedLogins = 0
        var acknowledgedExchanges = 0
        var failedRequests = 0
        var otherAnswers: [String: Int] = [:]
    }

    static let loginJSON = #"{"username":"alice","password":"correct horse battery","device_id":"crash","device_class":"other"}"#

    @Test(arguments: StoreBackend.allCases)
    func acknowledgedOperationsSurviveRepeatedSIGKILL(_ backend: StoreBackend) async throws {
        let kills = environmentInt("BATON_CRASH_KILLS", default: 20)
        let seed = SeededRandom.seed(from: "BATON_CRASH_SEED")
        print("crash loop (\(backend)): seed \(seed) (BATON_CRASH_SEED=\(seed) replays the kill timing), \(kills) kills")
        var random = SeededRandom(seed: seed)
        let arguments = ["--max-chains-per-user", "0", "--retry-grace", "5m", "--access-log", "off"]
        var servers = [try await ServerProcess.start(on: backend, arguments)]
        try servers[0].addUser("alice")
        let shared = Mutex(Shared())
        shared.withLock { $0.port = servers[0].port }

        let clients = 8
        let finished = DispatchGroup()
        for client in 0..<clients {
            finished.enter()
            let clientSeed = seed &+ UInt64(client) &* 7919
            Thread {
                var clientRandom = SeededRandom(seed: clientSeed)
                Self.runClient(client, shared: shared, random: &clientRandom)
                finished.leave()
            }.start()
        }

        var aheadByOne = 0, lost = 0, checked = 0
        for kill in 1...kills {
            let before = shared.withLock { $0.acknowledgedExchanges }
            _ = eventually(within: 10) { shared.withLock { $0.acknowledgedExchanges } > before }  // traffic is flowing
            usleep(UInt32.random(in: 50_000...400_000, using: &random))
            let server = servers.last!
            shared.withLock { $0.paused = true }  // no new requests; those in flight are cut
            server.process.send(SIGKILL)
            server.process.waitUntilExit()
            #expect(eventually(within: 20) { shared.withLock { $0.inRequest } == 0 }, "a client hung after kill \(kill)")
            let acknowledged = shared.withLock { $0.acknowledged }
            let check = try LineageCheck(databasePath: server.databasePath, acknowledged: acknowledged)
            #expect(check.problems == [], "after kill \(kill)")
            aheadByOne += check.aheadByOne
            lost += check.lost
            checked += check.chainsChecked
            let restarted = try server.restarted()
            servers.append(restarted)
            shared.withLock {
                $0.port = restarted.port
                $0.paused = false
            }
        }
        shared.withLock { $0.stopping = true }
        finished.wait()
        #expect(servers.last!.stop() == 0)
        let final = shared.withLock { $0 }
        let check = try LineageCheck(databasePath: servers.last!.databasePath, acknowledged: final.acknowledged)
        #expect(check.problems == [])
        lost += check.lost
        #expect(lost == 0)
        #expect(final.acknowledgedExchanges > kills * 5, "too little traffic to mean anything")
        #expect(final.otherAnswers.isEmpty, "unexpected answers: \(final.otherAnswers)")
        print("crash loop (\(backend)): seed \(seed), \(kills) SIGKILLs; acknowledged \(final.acknowledgedLogins) logins and " +
              "\(final.acknowledgedExchanges) exchanges on \(final.acknowledged.count) chains; \(checked) chain checks after kills; " +
              "\(aheadByOne) chains one step ahead (exchange in flight at the kill); \(final.failedRequests) requests cut by a kill; lost \(lost)")
        servers.removeAll()  // the last one removes the directory
    }

    /// One client: logs in, exchanges its chain's head; sometimes starts a new chain. A request
    /// cut by a kill is retried with the same token once the server is back: R3a's lost-response
    /// retry, which needs the chain's device (X-Device-Id) and the grace (5 minutes here).
    ///
    /// Each client has its own source address, as distinct phones would: the password-hash
    /// queue gives one address at most a quarter of its places once it is busy (docs/security.md, finding 5).
    static func runClient(_ client: Int, shared: borrowing Mutex<Shared>, random: inout SeededRandom) {
        let address = "127.0.6.\(client + 1)"
        var chain: Int64?
        var token: String?
        while true {
            let port: UInt16? = shared.withLock { state -> UInt16? in
                if state.stopping { return 0 }
                if state.paused { return nil }
                state.inRequest += 1
                return state.port
            }
            guard let port else { usleep(5_000); continue }  // paused while the test checks
            if port == 0 { return }
            defer { shared.withLock { $0.inRequest -= 1 } }
            if token == nil || Int.random(in: 0..<100, using: &random) < 3 {
                guard let response = try? HTTPConnection(port: port, from: address).request("POST", "/v1/login", json: loginJSON) else {
                    shared.withLock { $0.failedRequests += 1 }
                    continue
                }
                guard response.status == 200, let id = chainDatabaseID(response.json["chain_id"] as? String ?? ""), let issued = response.json["token"] as? String else {
                    shared.withLock { $0.otherAnswers["login \(response.status) \(response.error ?? "")", default: 0] += 1 }
                    continue
                }
                (chain, token) = (id, issued)
                shared.withLock {
                    $0.acknowledged[id] = Acknowledged(generation: 0, token: issued)
                    $0.acknowledgedLogins += 1
                }
                continue
            }
            guard let response = try? HTTPConnection(port: port, from: address).request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", "crash")]) else {
                shared.withLock { $0.failedRequests += 1 }
                continue  // unknown outcome: retry with the same token (R3a)
            }
            guard response.status == 200, let generation = response.json["generation"] as? Int, let issued = response.json["token"] as? String else {
                shared.withLock { $0.otherAnswers["exchange \(response.status) \(response.error ?? "")", default: 0] += 1 }
                token = nil
                continue
            }
            token = issued
            shared.withLock {
                $0.acknowledged[chain!] = Acknowledged(generation: generation, token: issued)
                $0.acknowledgedExchanges += 1
            }
        }
    }
}

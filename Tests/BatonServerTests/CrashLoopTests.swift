import BatonTestSupport
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
    /// What the clients share with the test: the acknowledgements, the counts.
    struct Shared {
        var acknowledged: [Int64: Acknowledged] = [:]
        var acknowledgedLogins = 0
        var acknowledgedExchanges = 0
        var failedRequests = 0
        var otherAnswers: [String: Int] = [:]
    }

    static let loginJSON = #"{"username":"alice","password":"correct horse battery","device_id":"crash","device_class":"other"}"#

    @Test(arguments: StoreBackend.allCases)
    func acknowledgedOperationsSurviveRepeatedSIGKILL(_ backend: StoreBackend) async throws {
        let (kills, seed) = KillGate.plan("BATON_CRASH", defaultKills: 20, label: "crash loop (\(backend))")
        var random = SeededRandom(seed: seed)
        let arguments = ["--max-chains-per-user", "0", "--retry-grace", "5m", "--access-log", "off"]
        var servers = [try await ServerProcess.start(on: backend, arguments)]
        try servers[0].addUser("alice")
        let shared = Mutex(Shared())
        let gate = KillGate(port: servers[0].port)
        let clients = gate.startClients(8, seed: seed) { client, random in Self.runClient(client, gate: gate, shared: shared, random: &random) }

        var aheadByOne = 0, lost = 0, checked = 0
        for kill in 1...kills {
            try gate.killAndRestart(&servers, kill: kill, random: &random, progress: { shared.withLock { $0.acknowledgedExchanges } }) { server in
                let acknowledged = shared.withLock { $0.acknowledged }
                let check = try LineageCheck(databasePath: server.databasePath, acknowledged: acknowledged)
                #expect(check.problems == [], "after kill \(kill)")
                aheadByOne += check.aheadByOne
                lost += check.lost
                checked += check.chainsChecked
            }
        }
        gate.stop(clients)
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
    static func runClient(_ client: Int, gate: KillGate, shared: borrowing Mutex<Shared>, random: inout SeededRandom) {
        let address = "127.0.6.\(client + 1)"
        var chain: Int64?
        var token: String?
        while let port = gate.enter() {
            defer { gate.leave() }
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

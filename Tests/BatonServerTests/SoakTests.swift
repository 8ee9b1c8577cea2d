@testable import BatonStore
import BatonTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// Mixed traffic from many clients for BATON_SOAK_SECONDS (60 by default; 600 for the long
/// run): 80% verify, 15% exchange, 4% login, 1% reuse attacks. No 5xx, memory and descriptors
/// stay flat after warm-up, every attack is detected and its chain revoked, nothing acknowledged
/// is lost; the p99 latency of each window is printed, not bounded (a benchmark's business).
@Suite(.serialized)
struct SoakTests {
    enum Operation { case verify, exchange, login, attack }

    /// One window's tally.
    struct Window {
        var latencies = Latencies()
        /// Verify alone: the other routes' p99 is argon2id's (login) or an fsync's (exchange).
        var verify = Latencies()
        var answers: [String: Int] = [:]
    }

    struct Shared {
        var windows: [Window] = []
        var acknowledged: [Int64: Acknowledged] = [:]
        var attackedChains: Set<Int64> = []
        var attacksDetected = 0
        var unexpected: [String: Int] = [:]
    }

    static let clients = 8
    /// Each client's pause between requests: about 200 requests/s in all, 8 logins/s, which
    /// one argon2id slot (the default on 2 cores) serves without queueing up.
    static let pause: useconds_t = 40_000
    static let windowSeconds = 10

    @Test func mixedTrafficSoak() throws {
        let duration = environmentInt("BATON_SOAK_SECONDS", default: 60)
        let seed = SeededRandom.seed(from: "BATON_SOAK_SEED")
        let server = try ServerProcess(["--max-chains-per-user", "0", "--access-log", "off"])
        try server.addUser("alice")
        let pid = server.process.processIdentifier
        let shared = Mutex(Shared(windows: Array(repeating: Window(), count: duration / Self.windowSeconds + 1)))
        let started = DispatchTime.now().uptimeNanoseconds
        let deadline = started + UInt64(duration) * 1_000_000_000
        let port = server.port
        let finished = DispatchGroup()
        for client in 0..<Self.clients {
            finished.enter()
            let clientSeed = seed &+ UInt64(client) &* 104_729
            Thread {
                var random = SeededRandom(seed: clientSeed)
                Self.runClient(port: port, client: client, started: started, deadline: deadline, shared: shared, random: &random)
                finished.leave()
            }.start()
        }
        // Samples of the server's resident memory and descriptors, one per window.
        var samples: [ProcessStats] = []
        while DispatchTime.now().uptimeNanoseconds < deadline {
            usleep(useconds_t(Self.windowSeconds) * 1_000_000)
            samples.append(try ProcessStats(pid: pid))
        }
        finished.wait()
        let end = try ProcessStats(pid: pid)
        #expect(server.stop() == 0)
        let result = shared.withLock { $0 }

        let windows = result.windows.filter { $0.latencies.count > 0 }
        let requests = windows.reduce(0) { $0 + $1.latencies.count }
        let warm = samples[min(1, samples.count - 1)]  // after the first window: caches, readers, arenas
        let rssGrowthKiB = end.residentKiB - warm.residentKiB
        let p99s = windows.map { $0.latencies.percentile(0.99) }
        let verifyP99s = windows.filter { $0.verify.count > 0 }.map { $0.verify.percentile(0.99) }
        let answers = windows.reduce(into: [String: Int]()) { total, window in total.merge(window.answers, uniquingKeysWith: +) }
        #expect(result.unexpected.isEmpty, "\(result.unexpected)")
        #expect(!answers.keys.contains { $0.hasPrefix("5") }, "\(answers)")
        #expect(result.attacksDetected == result.attackedChains.count && result.attackedChains.count > 0)
        // argon2id's 19 MiB working area is unmapped after each hash, so logins leave nothing
        // behind: flat after warm-up (a small allowance for allocator noise), and under the
        // 64 MiB the server is held to at every point.
        #expect(rssGrowthKiB < 8 * 1024, "RSS grew \(rssGrowthKiB) KiB after warm-up: \(samples.map(\.residentKiB))")
        #expect(samples.allSatisfy { $0.residentKiB < 64 * 1024 } && end.residentKiB < 64 * 1024,
                "RSS over 64 MiB: \(samples.map(\.residentKiB)) → \(end.residentKiB)")
        #expect(end.openDescriptors <= warm.openDescriptors + 2, "descriptors \(samples.map(\.openDescriptors)) → \(end.openDescriptors)")
        // Latency is reported (the summary below), not asserted: on a loaded machine a window's
        // verify p99 reached 80 ms with nothing wrong. Latency bounds belong to the benchmarks
        // (docs/benchmarks.md); the soak asserts correctness, memory and descriptors.

        let connection = try Connection(path: server.databasePath)
        let revokedForReuse = Set(try connection.statement("SELECT id FROM chains WHERE revoked_reason = 'reuse_detected'").all { $0.int(0) })
        connection.close()
        #expect(revokedForReuse == result.attackedChains, "attacked chains not revoked: \(result.attackedChains.subtracting(revokedForReuse))")
        let live = result.acknowledged.filter { !result.attackedChains.contains($0.key) }
        let check = try LineageCheck(databasePath: server.databasePath, acknowledged: live)
        #expect(check.problems == [] && check.lost == 0)

        let p99Text = p99s.map { String(format: "%.1f", $0) }.joined(separator: ", ")
        let verifyText = verifyP99s.map { String(format: "%.1f", $0) }.joined(separator: ", ")
        let rssText = samples.map { String($0.residentKiB) }.joined(separator: ", ")
        let fdText = samples.map { String($0.openDescriptors) }.joined(separator: ", ")
        var summary = "soak: \(duration) s, seed \(seed), \(Self.clients) clients, \(requests) requests \(answers); "
        summary += "\(result.attackedChains.count) reuse attacks, \(result.attacksDetected) detected, \(revokedForReuse.count) chains revoked; "
        summary += "RSS KiB per window [\(rssText)] end \(end.residentKiB) (growth after warm-up \(rssGrowthKiB)); "
        summary += "fds per window [\(fdText)] end \(end.openDescriptors); p99 ms per window: all [\(p99Text)], verify [\(verifyText)]; "
        summary += "\(check.chainsChecked) chains checked, lost \(check.lost)"
        print(summary)
    }

    /// One client on one kept-alive connection: its chain, its previous token (to attack with).
    static func runClient(port: UInt16, client: Int, started: UInt64, deadline: UInt64, shared: borrowing Mutex<Shared>, random: inout SeededRandom) {
        // Each client its own source address, as distinct phones would be: the hash queue gives
        // one address at most a quarter of its places once it is busy (docs/security.md, finding 5).
        let address = "127.0.5.\(client + 1)"
        guard var connection = try? HTTPConnection(port: port, from: address) else { return }
        var chain: Int64?
        var head: Acknowledged?
        var previous: String?
        let login = #"{"username":"alice","password":"correct horse battery","device_id":"soak-\#(client)"}"#
        while DispatchTime.now().uptimeNanoseconds < deadline {
            let roll = Int.random(in: 0..<100, using: &random)
            var operation: Operation = roll < 80 ? .verify : roll < 95 ? .exchange : roll < 99 ? .login : .attack
            if head == nil { operation = .login }
            if operation == .attack, previous == nil { operation = .exchange }
            let (response, seconds) = timed { () -> HTTPConnection.Response? in
                switch operation {
                case .verify: try? connection.request("GET", "/v1/verify", token: head!.token)
                case .exchange: try? connection.request("POST", "/v1/exchange", token: head!.token)
                case .login: try? connection.request("POST", "/v1/login", json: login)
                case .attack: try? connection.request("POST", "/v1/exchange", token: previous!)
                }
            }
            let window = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000_000) / windowSeconds
            guard let response else {
                shared.withLock { $0.unexpected["\(operation): no answer", default: 0] += 1 }
                connection.close()
                guard let reconnected = try? HTTPConnection(port: port, from: address) else { return }
                connection = reconnected
                continue
            }
            let tag = "\(response.status) \(response.error ?? "ok")"
            shared.withLock {
                if window < $0.windows.count {
                    $0.windows[window].latencies.record(seconds)
                    if operation == .verify { $0.windows[window].verify.record(seconds) }
                    $0.windows[window].answers[tag, default: 0] += 1
                }
            }
            switch (operation, response.status) {
            case (.verify, 200): break
            case (.exchange, 200), (.login, 200):
                if operation == .login { chain = chainDatabaseID(response.json["chain_id"] as? String ?? "") }
                previous = operation == .login ? nil : head?.token
                head = Acknowledged(generation: response.json["generation"] as? Int ?? -1, token: response.json["token"] as? String ?? "")
                let (id, ack) = (chain!, head!)
                shared.withLock { $0.acknowledged[id] = ack }
            case (.attack, 401) where response.error == "token_reused":
                // The reused token revokes the chain: the head it had is dead too.
                let after = try? connection.request("GET", "/v1/verify", token: head!.token)
                let revoked = after?.error == "chain_revoked" && after?.json["reason"] as? String == "reuse_detected"
                let id = chain!
                shared.withLock {
                    $0.attackedChains.insert(id)
                    if revoked { $0.attacksDetected += 1 } else { $0.unexpected["attacked head still \(after?.status ?? 0)", default: 0] += 1 }
                }
                (head, previous) = (nil, nil)
            default:
                shared.withLock { $0.unexpected["\(operation): \(tag)", default: 0] += 1 }
                (head, previous) = (nil, nil)
            }
            usleep(pause)
        }
        connection.close()
    }
}

import BatonTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// Floods: more connections than the limit, forged tokens, failed logins. The server stays
/// up, answers each with the documented error, and keeps serving the rest.
@Suite(.serialized)
struct FloodTests {
    static let wrongLogin = #"{"username":"alice","password":"wrong horse battery","device_id":"flood"}"#

    @Test func connectionsBeyondTheLimitGet503AndServiceResumes() throws {
        let server = try ServerProcess(["--max-connections", "16"])
        try server.addUser("alice")
        let token = try server.login()["token"] as! String
        #expect(try server.request("GET", "/v1/verify", token: token).status == 200)  // the readers are open
        let baseline = try ProcessStats(pid: server.process.processIdentifier)
        // Fill the limit with kept-alive connections (each answered once: accepted for sure).
        var held: [HTTPConnection] = []
        for _ in 0..<16 {
            let connection = try server.connect()
            #expect(try connection.request("GET", "/healthz").status == 200)
            held.append(connection)
        }
        var surplus: [String: Int] = [:]
        for _ in 0..<200 {
            let connection = try server.connect()
            defer { connection.close() }
            let response = try? connection.readResponse()
            let ending = connection.isClosedByServer() ? "closed" : "open"
            surplus["\(response?.status ?? 0) \(response?.error ?? "-") \(ending)", default: 0] += 1
        }
        #expect(surplus == ["503 unavailable closed": 200])
        for connection in held { connection.close() }
        #expect(eventually(within: 10) { (try? server.request("GET", "/healthz").status) == 200 })
        #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
        var after = try ProcessStats(pid: server.process.processIdentifier)
        _ = eventually(within: 10) {
            after = (try? ProcessStats(pid: server.process.processIdentifier)) ?? after
            return after.openDescriptors <= baseline.openDescriptors + 2
        }
        #expect(after.openDescriptors <= baseline.openDescriptors + 2, "descriptors: \(baseline.openDescriptors) before, \(after.openDescriptors) after")
        print("connection flood: 16 held + 200 beyond the limit, all 503 unavailable then closed; descriptors \(baseline.openDescriptors) before, \(after.openDescriptors) after")
    }

    /// Forged tokens (random text, a real token with its MAC broken, empty) are refused on the
    /// event loop and the worker, before the writer: the group-commit counters do not move.
    @Test func forgedTokenFloodNeverReachesTheWriter() throws {
        let server = try ServerProcess()
        try server.addUser("alice")
        let real = try server.login()["token"] as! String
        let before = try Self.commitCounters(server)
        let answers = Mutex<[String: Int]>([:])
        let port = server.port
        let (_, seconds) = timed {
            race(threads: 8) { thread in
                var random = SeededRandom(seed: UInt64(thread + 1))
                guard let connection = try? HTTPConnection(port: port) else { return }
                defer { connection.close() }
                for index in 0..<250 {
                    let forged: String = switch index % 3 {
                    case 0: String((0..<60).map { _ in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".randomElement(using: &random)! })
                    case 1: Self.flipped(real, at: Int.random(in: 0..<real.count, using: &random))
                    default: String(real.prefix(Int.random(in: 0..<real.count, using: &random)))
                    }
                    let (method, path) = index % 2 == 0 ? ("GET", "/v1/verify") : ("POST", "/v1/exchange")
                    let response = try? connection.request(method, path, headers: [("Authorization", "Bearer " + forged)])
                    answers.withLock { $0["\(response?.status ?? 0) \(response?.error ?? "-")", default: 0] += 1 }
                }
            }
        }
        let counts = answers.withLock { $0 }
        #expect(counts.keys.allSatisfy { $0 == "401 token_invalid" || $0 == "401 token_missing" }, "\(counts)")
        #expect(counts.values.reduce(0, +) == 2000)
        let after = try Self.commitCounters(server)
        #expect(after == before, "the writer committed \(after.batches - before.batches) batches during a forged-token flood")
        #expect(try server.request("GET", "/v1/verify", token: real).status == 200)
        print("forged tokens: 2000 requests in \(String(format: "%.1f", seconds)) s, answers \(counts); group commits \(before) before and after")
    }

    /// One user, one address: the throttle answers 429 without hashing. Many users from many
    /// addresses: at most one hash runs per slot and 8 wait per slot; beyond, 503 at once. The
    /// server's CPU stays bounded and verify keeps a low p99 meanwhile.
    @Test func failedLoginFloodIsThrottledAndItsHashingBounded() throws {
        let server = try ServerProcess(["--max-concurrent-hashes", "1"])
        try server.addUser("alice")
        var same: [String: Int] = [:]
        var throttledLatency = Latencies()
        for _ in 0..<30 {
            let (response, seconds) = try timed { try server.request("POST", "/v1/login", json: Self.wrongLogin) }
            same["\(response.status) \(response.error ?? "-")", default: 0] += 1
            if response.status == 429 {
                throttledLatency.record(seconds)
                #expect(response.headers["retry-after"] != nil)
            }
        }
        #expect(same["429 too_many_attempts", default: 0] >= 20 && same.keys.allSatisfy { $0 == "401 invalid_credentials" || $0 == "429 too_many_attempts" }, "\(same)")

        try server.addUser("bob")
        let token = try server.login("bob", device: "watcher", headers: [("X-Forwarded-For", "10.8.0.1")])["token"] as! String
        let port = server.port
        let stop = Atomic<Bool>(false)
        let verifyLatency = Mutex(Latencies())
        let verifyErrors = Atomic<Int>(0)
        let watcher = Thread {
            guard let connection = try? HTTPConnection(port: port) else { return }
            defer { connection.close() }
            while !stop.load(ordering: .relaxed) {
                let (response, seconds) = timed { try? connection.request("GET", "/v1/verify", token: token) }
                if response?.status == 200 { verifyLatency.withLock { $0.record(seconds) } } else { verifyErrors.add(1, ordering: .relaxed) }
                usleep(2_000)
            }
        }
        let answers = Mutex<[String: Int]>([:])
        let refusalLatency = Mutex(Latencies())
        let cpuBefore = try ProcessStats(pid: server.process.processIdentifier).cpuSeconds
        watcher.start()
        let (_, seconds) = timed {
            race(threads: 48) { thread in
                for attempt in 0..<6 {
                    let json = #"{"username":"user\#(thread)x\#(attempt)","password":"wrong horse battery","device_id":"flood"}"#
                    let (response, latency) = timed {
                        try? HTTPConnection(port: port).request("POST", "/v1/login", headers: [("X-Forwarded-For", "10.9.\(thread).\(attempt + 1)")], json: json)
                    }
                    answers.withLock { $0["\(response?.status ?? 0) \(response?.error ?? "-")", default: 0] += 1 }
                    if response?.status == 503 { refusalLatency.withLock { $0.record(latency) } }
                }
            }
        }
        let cpu = try ProcessStats(pid: server.process.processIdentifier).cpuSeconds - cpuBefore
        stop.store(true, ordering: .relaxed)
        while watcher.isExecuting { usleep(10_000) }
        let counts = answers.withLock { $0 }
        #expect(counts.keys.allSatisfy { ["401 invalid_credentials", "429 too_many_attempts", "503 unavailable"].contains($0) }, "\(counts)")
        #expect(counts["503 unavailable", default: 0] > 0, "the hash queue bound never engaged: \(counts)")
        let refusals = refusalLatency.withLock { $0 }
        #expect(refusals.percentile(0.5) < 200, "503s took \(refusals.percentile(0.5)) ms (p50): not at once")
        #expect(cpu / seconds < 1.7, "server CPU \(cpu / seconds) cores during the flood")
        let verify = verifyLatency.withLock { $0 }
        #expect(verify.count > 10 && verifyErrors.load(ordering: .relaxed) == 0)
        #expect(verify.percentile(0.99) < 250, "verify p99 \(verify.percentile(0.99)) ms during the login flood")
        print(String(format: "login flood: same user/address 30 attempts %@, 429 p50 %.1f ms; 288 logins from 48 clients in %.1f s: %@; " +
                     "503 p50 %.1f ms; server CPU %.2f cores; verify during the flood: %d requests, p50 %.1f ms, p99 %.1f ms",
                     "\(same)", throttledLatency.percentile(0.5), seconds, "\(counts)", refusals.percentile(0.5), cpu / seconds,
                     verify.count, verify.percentile(0.5), verify.percentile(0.99)))
    }

    /// A morning peak behind one carrier-grade NAT address: many users log in with the right
    /// password at once. A full share of the hash queue is "busy, retry" (503 `unavailable`
    /// with `Retry-After`), never `429 too_many_attempts` ("Too many failed password attempts"):
    /// nothing failed, and the address is not throttled; each retry in time gets in.
    @Test func sharedAddressMorningPeakIsToldToRetryNotThrottled() throws {
        let server = try ServerProcess(["--max-concurrent-hashes", "1"])
        let users = 16
        for user in 0..<users { try server.addUser("peak\(user)") }
        let port = server.port
        let answers = Mutex<[String: Int]>([:])
        let missingRetryAfter = Atomic<Int>(0)
        let loggedIn = Atomic<Int>(0)
        race(threads: users) { user in
            let json = #"{"username":"peak\#(user)","password":"correct horse battery","device_id":"phone","device_class":"mobile"}"#
            for _ in 0..<60 {
                let response = try? HTTPConnection(port: port).request("POST", "/v1/login", headers: [("X-Forwarded-For", "100.64.0.1")], json: json)
                answers.withLock { $0["\(response?.status ?? 0) \(response?.error ?? "-")", default: 0] += 1 }
                if response?.status == 200 { loggedIn.add(1, ordering: .relaxed); return }
                if response?.headers["retry-after"] == nil { missingRetryAfter.add(1, ordering: .relaxed) }
                usleep(200_000)
            }
        }
        let counts = answers.withLock { $0 }
        #expect(counts.keys.allSatisfy { ["200 -", "503 unavailable"].contains($0) }, "\(counts)")
        #expect(loggedIn.load(ordering: .relaxed) == users && missingRetryAfter.load(ordering: .relaxed) == 0, "\(counts)")
        let busy = try server.request("POST", "/v1/login", headers: [("X-Forwarded-For", "100.64.0.1")],
                                      json: #"{"username":"peak0","password":"correct horse battery","device_id":"phone","device_class":"mobile"}"#)
        #expect(busy.status == 200, "\(busy.text)")
    }

    static func flipped(_ token: String, at index: Int) -> String {
        var characters = Array(token)
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }

    /// The group-commit histogram's count (batches) and sum (writes) from /metrics.
    static func commitCounters(_ server: ServerProcess) throws -> (batches: Int, writes: Int) {
        let text = try server.request("GET", "/metrics").text
        func value(_ name: String) -> Int {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) } ?? -1
        }
        return (value("baton_group_commit_batch_size_count"), value("baton_group_commit_batch_size_sum"))
    }
}

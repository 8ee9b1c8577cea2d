@testable import BatonStore
import Foundation
import Glibc
import Synchronization
import Testing

/// Baton behind a live nginx running the shipped proxy rules.
@Suite(.serialized)
struct NginxTests {
    let baton: ServerProcess
    let app: EchoApplication
    let nginx: NginxProcess

    init() throws {
        // nginx connects from 127.0.0.1; clients come from other loopback addresses.
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        app = try EchoApplication()
        nginx = try NginxProcess(batonPort: baton.port, appPort: app.port)
    }

    func login(from source: String = "127.0.0.5", headers: [(String, String)] = []) throws -> [String: Any] {
        let response = try nginx.request("POST", "/v1/login", from: source, headers: headers,
                                         json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
        #expect(response.status == 200, "\(response.text)")
        return response.json
    }

    @Test func loginVerifyExchangeAndReuseThroughNginx() throws {
        let first = try login()["token"] as! String
        #expect(try nginx.request("GET", "/v1/verify", from: "127.0.0.5", token: first).status == 200)
        let exchanged = try nginx.request("POST", "/v1/exchange", from: "127.0.0.5", token: first)
        #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == 1)
        let second = exchanged.json["token"] as! String
        let reused = try nginx.request("POST", "/v1/exchange", from: "127.0.0.6", token: first)
        #expect(reused.status == 401 && reused.error == "token_reused")
        #expect(reused.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#)
        let revoked = try nginx.request("GET", "/v1/verify", from: "127.0.0.5", token: second)
        #expect(revoked.error == "chain_revoked" && revoked.json["reason"] as? String == "reuse_detected")
    }

    @Test func auditRecordsTheClientAddressNginxSawAndIgnoresSpoofing() throws {
        _ = try login(from: "127.0.0.7", headers: [("X-Forwarded-For", "203.0.113.66"), ("X-Real-IP", "203.0.113.67")])
        let connection = try Connection(path: baton.databasePath)
        defer { connection.close() }
        let ips = try connection.statement("SELECT ip FROM audit WHERE kind = 'login_succeeded' ORDER BY id DESC LIMIT 1").all { $0.text(0) }
        #expect(ips == ["127.0.0.7"])
    }

    @Test func authRequestPassesTheIdentityToTheApplication() throws {
        let token = try login()["token"] as! String
        let response = try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: token, headers: [("X-Baton-User-Id", "999")])
        #expect(response.status == 200)
        #expect(response.json["x-baton-user-id"] as? String == "1")  // the client's value was overwritten
        #expect(response.json["x-baton-username"] as? String == "alice")
        #expect((response.json["x-baton-chain-id"] as? String)?.count == 16)
        #expect(response.json["authorization"] == nil)  // the app gets the identity, not the token
        #expect(response.json["path"] as? String == "/api/orders")
    }

    @Test func authRequestTurnsAwaySupersededRevokedAndForgedTokensWithBatonsAnswer() throws {
        let first = try login()["token"] as! String
        let second = try nginx.request("POST", "/v1/exchange", from: "127.0.0.5", token: first).json["token"] as! String
        let superseded = try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: first)
        #expect(superseded.status == 401 && superseded.error == "token_superseded")
        #expect(superseded.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#)
        #expect(superseded.headers["content-type"] == "application/json")
        #expect(try nginx.request("POST", "/v1/logout", from: "127.0.0.5", token: second).status == 204)
        let revoked = try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: second)
        #expect(revoked.status == 401 && revoked.error == "chain_revoked" && revoked.json["reason"] as? String == "logout")
        let forged = try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: "bt1_" + String(repeating: "A", count: 80))
        #expect(forged.status == 401 && forged.error == "token_invalid")
        let missing = try nginx.request("GET", "/api/orders", from: "127.0.0.5")
        #expect(missing.status == 401 && missing.error == "token_missing" && missing.headers["www-authenticate"] == #"Bearer realm="baton""#)
    }

    @Test func limitReqAnswers429InJSON() throws {
        // 20 r/s with a burst of 40: 160 requests from one address draw 429s if they take
        // less than 6 s. Eight at a time, so that a loaded machine still sends them that fast.
        let answers = Mutex<(statuses: [Int: Int], limited: HTTPConnection.Response?)>(([:], nil))
        let nginx = self.nginx
        race(threads: 8) { _ in
            for _ in 0..<20 {
                let response = try? nginx.request("POST", "/v1/exchange", from: "127.0.0.8", token: "not-a-token")
                answers.withLock { answers in
                    answers.statuses[response?.status ?? 0, default: 0] += 1
                    if response?.status == 429 { answers.limited = response }
                }
            }
        }
        let (statuses, limited) = answers.withLock { $0 }
        #expect(statuses[429, default: 0] > 0 && statuses[0] == nil, "\(statuses)")
        #expect(limited?.error == "too_many_attempts" && limited?.headers["retry-after"] == "1")
        #expect(limited?.headers["content-type"] == "application/json")
    }

    /// Verify, logout and the application behind verify are limited per address too, with
    /// bursts generous enough for many users behind one address: the first 40 requests of an
    /// address are never refused, a flood of 1,200 from one address is, and another address
    /// keeps its own budget.
    @Test(arguments: [("GET", "/v1/verify", "127.0.0.21"), ("POST", "/v1/logout", "127.0.0.22"), ("GET", "/api/orders", "127.0.0.23")])
    func verifyLogoutAndAppAreRateLimitedPerAddress(_ method: String, _ path: String, _ source: String) throws {
        for index in 0..<40 {
            let honest = try nginx.request(method, path, from: source, token: "honest-token-\(index)")
            #expect(honest.status == 401, "\(path): \(honest.status) \(honest.text)")
        }
        let answers = Mutex<(statuses: [Int: Int], limited: HTTPConnection.Response?)>(([:], nil))
        let nginx = self.nginx
        race(threads: 8) { thread in
            for index in 0..<150 {
                // A token of its own each: the per-token zone (below) stays out of this.
                let response = try? nginx.request(method, path, from: source, token: "not-a-token-\(thread)-\(index)")
                answers.withLock { answers in
                    answers.statuses[response?.status ?? 0, default: 0] += 1
                    if response?.status == 429 { answers.limited = response }
                }
            }
        }
        let (statuses, limited) = answers.withLock { $0 }
        #expect(statuses[429, default: 0] > 0 && Set(statuses.keys).isSubset(of: [401, 429]), "\(path): \(statuses)")
        #expect(limited?.error == "too_many_attempts" && limited?.headers["retry-after"] == "1")
        #expect(try nginx.request(method, path, from: "127.0.0.24", token: "another-token").status == 401)
    }

    /// Issue 28 ("per-chain limits"): one token sent from many addresses, each under its own
    /// limit (a botnet with a stolen token), is cut off per token (the Authorization header:
    /// one chain's live token); another token from one of those addresses still passes.
    @Test(arguments: [("/v1/verify", 41), ("/api/orders", 51), ("/api/transfer/1", 61)])
    func oneTokenFromManyAddressesIsRateLimitedPerToken(_ path: String, _ firstAddress: Int) throws {
        let token = "stolen-\(firstAddress)-" + String(repeating: "t", count: 40)
        let answers = Mutex<[Int: Int]>([:])
        let nginx = self.nginx
        race(threads: 8) { thread in
            let source = "127.0.0.\(firstAddress + thread % 4)"  // 4 addresses, 2 threads each
            for _ in 0..<50 {  // 100 an address: under its burst of 200
                let status = (try? nginx.request("GET", path, from: source, token: token))?.status ?? 0
                answers.withLock { $0[status, default: 0] += 1 }
            }
        }
        let statuses = answers.withLock { $0 }
        #expect(statuses[429, default: 0] > 0 && Set(statuses.keys).isSubset(of: [401, 429]), "\(path): \(statuses)")
        #expect(try nginx.request("GET", path, from: "127.0.0.\(firstAddress)", token: "another-" + token).status == 401)
    }

    @Test(arguments: ["/v1/confirm", "/v1/password"])
    func passwordCheckingEndpointsAreRateLimitedPerAddress(_ path: String) throws {
        // Each call costs Baton an argon2id hash; a burst from one address is cut off by nginx.
        var statuses: [Int: Int] = [:]
        var limited: HTTPConnection.Response?
        for _ in 0..<40 {
            let response = try nginx.request("POST", path, from: "127.0.0.10", token: "not-a-token", json: #"{"password":"x"}"#)
            statuses[response.status, default: 0] += 1
            if response.status == 429 { limited = response }
        }
        #expect(statuses[429, default: 0] > 0, "\(statuses)")
        #expect(limited?.error == "too_many_attempts" && limited?.headers["retry-after"] == "1")
        #expect(limited?.headers["content-type"] == "application/json")
        // Another address has its own budget.
        #expect(try nginx.request("POST", path, from: "127.0.0.11", token: "not-a-token", json: #"{"password":"x"}"#).status != 429)
    }

    @Test func a20KiBBodyGets413FromNginxInJSON() throws {
        let body = "{\"username\":\"" + String(repeating: "a", count: 20 * 1024) + "\"}"
        let response = try nginx.request("POST", "/v1/login", from: "127.0.0.9", json: body)
        #expect(response.status == 413 && response.error == "payload_too_large")
        #expect(response.headers["content-type"] == "application/json")
    }

    /// Fresh-clone walk-through (issue 32): with Baton down, the app's locations answered
    /// nginx's HTML 500, and with the app down its HTML 502, where docs/deploy.md promises the
    /// JSON 503 `unavailable` with Retry-After that BatonClient retries. A location's own
    /// `error_page` (401, 429) drops every inherited one, the 5xx line included.
    @Test func protectedLocationsAnswerJSON503WhenBatonOrTheAppIsDown() throws {
        let token = try login(from: "127.0.0.31")["token"] as! String
        let appDown = try NginxProcess(batonPort: baton.port, appPort: try NginxProcess.freePort())
        let downBaton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32"])
        let batonDown = try NginxProcess(batonPort: downBaton.port, appPort: app.port)
        _ = downBaton.stop()
        for (gateway, what) in [(appDown, "the app"), (batonDown, "Baton")] {
            for path in ["/api/orders", "/api/transfer/1"] {
                let response = try gateway.request("GET", path, from: "127.0.0.31", token: token)
                #expect(response.status == 503 && response.error == "unavailable", "\(what) down, \(path): \(response.status) \(response.text.prefix(120))")
                #expect(response.headers["retry-after"] == "1" && response.headers["content-type"] == "application/json", "\(what) down, \(path)")
            }
        }
    }

    @Test func racingExchangesThroughNginxLeaveAtMostOneVerifyingToken() throws {
        for round in 0..<20 {
            let token = try login(from: "127.0.1.\(round + 1)")["token"] as! String
            let winners = Mutex<[String]>([])
            let port = nginx.port
            race(threads: 32) { index in
                // Each racer its own source address: each its own rate-limit bucket, as distinct phones would be.
                guard let connection = try? HTTPConnection(port: port, from: "127.0.2.\(index + 1)") else { return }
                defer { connection.close() }
                if let response = try? connection.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", "phone-1")]),
                   response.status == 200, let next = response.json["token"] as? String {
                    winners.withLock { $0.append(next) }
                }
            }
            let won = winners.withLock { $0 }
            #expect(!won.isEmpty, "round \(round)")
            let verifying = try (won.reversed() + [token]).filter {
                try nginx.request("GET", "/v1/verify", from: "127.0.3.\(round + 1)", token: $0).status == 200
            }
            #expect(verifying.count <= 1, "round \(round)")
        }
    }
}

/// The shipped unit passes `systemd-analyze verify`. (The TLS site's `nginx -t` in Debian's
/// layout: DeployProcedureTests.)
struct DeployFileTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func systemdUnitVerifies() throws {
        let directory = NSTemporaryDirectory() + "baton-unit-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The unit as shipped, with ExecStart pointing at the binary this build produced and the
        // settings file at its place in the repository.
        let unit = try String(contentsOfFile: "\(repositoryRoot)/deploy/systemd/baton.service", encoding: .utf8)
            .replacingOccurrences(of: "ExecStart=/usr/bin/baton", with: "ExecStart=" + batonBinary)
            .replacingOccurrences(of: "EnvironmentFile=/etc/default/baton", with: "EnvironmentFile=\(repositoryRoot)/deploy/default/baton")
        try unit.write(toFile: directory + "/baton.service", atomically: true, encoding: .utf8)
        let verify = ChildProcess()
        verify.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        verify.arguments = ["verify", directory + "/baton.service"]
        let errors = Pipe()
        verify.standardError = errors
        verify.standardOutput = errors
        try verify.run()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        verify.waitUntilExit()
        #expect(verify.terminationStatus == 0, "\(output)")
        #expect(!output.contains("baton.service:"), "\(output)")  // no warnings about our own unit
    }
}

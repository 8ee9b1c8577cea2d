@testable import BatonCore
@testable import BatonStore
import Foundation
import Glibc
import Synchronization
import Testing

struct ServerBehaviourTests {
    @Test func slowClientDoesNotDelayOthersAndTimesOut() throws {
        // 5 s: the 20 requests below must all be over before the slow client's timeout, also
        // on a loaded machine; each under a second shows none waited for it.
        let server = try ServerProcess(["--request-timeout", "5s"])
        try server.addUser("alice")
        let token = try server.login()["token"] as! String
        let slow = try server.connect()
        defer { slow.close() }
        let head = Array("GET /v1/verify HTTP/1.1\r\nHost: a\r\n".utf8)
        try slow.send(Array(head.prefix(5)))
        // While the slow client dribbles bytes, others are served at full speed.
        for index in 0..<20 {
            if index < head.count - 5 { try slow.send([head[5 + index]]) }
            let started = Date()
            #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
            #expect(Date().timeIntervalSince(started) < 1)
        }
        // It never finishes its head: the request timeout answers 408 and closes.
        let response = try slow.readResponse()
        #expect(response.status == 408)
        #expect(slow.isClosedByServer())
    }

    @Test func idleKeepAliveConnectionIsClosedAfterTheIdleTimeout() throws {
        let server = try ServerProcess(["--idle-timeout", "300ms"])
        let connection = try server.connect()
        defer { connection.close() }
        #expect(try connection.request("GET", "/healthz").status == 200)
        #expect(connection.isClosedByServer())
    }

    @Test func connectionsBeyondTheLimitGet503() throws {
        let server = try ServerProcess(["--max-connections", "2"])
        let held = try (0..<2).map { _ in try server.connect() }
        defer { held.forEach { $0.close() } }
        for connection in held { #expect(try connection.request("GET", "/healthz").status == 200) }
        let extra = try server.connect()
        defer { extra.close() }
        let refused = try extra.readResponse()
        #expect(refused.status == 503 && refused.error == "unavailable")
    }

    /// Audit IPs by kind, from the database.
    static func auditIPs(_ server: ServerProcess, kind: String) throws -> [String] {
        let connection = try Connection(path: server.databasePath)
        defer { connection.close() }
        return try connection.statement("SELECT ip FROM audit WHERE kind = ? ORDER BY id").all([.text(kind)]) { $0.text(0) }
    }

    @Test func forwardedForIsBelievedOnlyFromATrustedPeer() throws {
        let trusted = try ServerProcess()  // default: loopback is a trusted proxy
        try trusted.addUser("alice")
        _ = try trusted.login(headers: [("X-Forwarded-For", "203.0.113.7")])
        _ = try trusted.login(headers: [("X-Forwarded-For", "198.51.100.1, 203.0.113.9, 127.0.0.1")])  // rightmost untrusted hop
        _ = try trusted.login(headers: [("X-Real-IP", "192.0.2.55")])
        #expect(try Self.auditIPs(trusted, kind: "login_succeeded") == ["203.0.113.7", "203.0.113.9", "192.0.2.55"])

        let untrusted = try ServerProcess(["--trusted-proxy", "10.0.0.0/8"])  // loopback peer not trusted
        try untrusted.addUser("alice")
        _ = try untrusted.login(headers: [("X-Forwarded-For", "203.0.113.7"), ("X-Real-IP", "192.0.2.55")])
        #expect(try Self.auditIPs(untrusted, kind: "login_succeeded") == ["127.0.0.1"])
    }

    @Test func sigtermClosesIdleConnectionsAndExitsCleanly() throws {
        let server = try ServerProcess()
        let idle = try server.connect()
        defer { idle.close() }
        #expect(try idle.request("GET", "/healthz").status == 200)
        let status = server.stop(SIGTERM)
        #expect(status == 0)
        #expect(idle.isClosedByServer())
        #expect(server.stdout.contains(#""event":"stopped""#))
        // The database was closed cleanly: the WAL was checkpointed and removed.
        #expect(!FileManager.default.fileExists(atPath: server.databasePath + "-wal"))
    }

    @Test func sigtermLetsAnInFlightRequestFinish() throws {
        let server = try ServerProcess()
        try server.addUser("alice")
        let connection = try server.connect()
        defer { connection.close() }
        // Accepted and served once, so the connection is the server's (a connection still in
        // the listen backlog at shutdown is reset, as with any server).
        #expect(try connection.request("GET", "/healthz").status == 200)
        // A login spends ~20 ms in argon2id; the signal lands while it runs.
        try connection.send("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 72\r\n\r\n"
            + #"{"username":"alice","password":"correct horse battery","device_id":"d1"}"#)
        server.process.send(SIGTERM)
        let response = try connection.readResponse()
        #expect(response.status == 200 || response.status == 503)
        #expect(response.headers["connection"] == "close")
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
    }

    @Test func tokensNeverAppearInLogsOrDatabaseFiles() throws {
        let server = try ServerProcess()
        try server.addUser("alice")
        var tokens: [String] = []
        for device in ["a", "b"] {
            var token = try server.login(device: device)["token"] as! String
            tokens.append(token)
            for _ in 0..<3 {
                token = try server.request("POST", "/v1/exchange", token: token).json["token"] as! String
                tokens.append(token)
                _ = try server.request("GET", "/v1/verify", token: token)
            }
        }
        _ = try server.request("POST", "/v1/exchange", token: tokens[0])  // reuse
        _ = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"wrong password!","device_id":"x"}"#)
        let files = ["", "-wal", "-shm"].compactMap { FileManager.default.contents(atPath: server.databasePath + $0) }
        #expect(server.stop() == 0)
        let logs = server.stdout + server.stderr
        #expect(logs.contains(#""path":"/v1/exchange""#))  // the access log did run
        for token in tokens {
            #expect(!logs.contains(token))
            #expect(!logs.contains(String(token.dropFirst(4).prefix(40))))
            for data in files { #expect(data.range(of: Data(token.utf8)) == nil) }
        }
        #expect(!logs.contains("correct horse battery") && !logs.contains("wrong password!"))
    }
}

import BatonTestSupport
import Foundation
import Glibc
import Testing

/// An event loop never waits for the database: a verify its memory cannot answer finishes on
/// a worker, so the other requests of that loop are answered meanwhile.
@Suite struct LoopNeverWaitsForTheDatabaseTests {
    /// One event loop; PostgreSQL's backends for the database are stopped (SIGSTOP: a stalled
    /// server, as a full disk or a lock pile-up makes one). A verify that must read the
    /// database waits on a worker; the loop keeps answering /healthz and /metrics, each within
    /// a second. Then the backends go on and the verify gets its answer.
    /// (Before: verify read the database on the loop, and every request on it waited with it,
    /// about 6 s, the connection's answer deadline.)
    @Test func aVerifyWaitingForAStalledPostgreSQLDoesNotHoldItsLoop() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let key = try SharedKeyFile()
        let server = try ServerProcess(["--access-log", "off", "--event-loops", "1", "--key-file", key.path], database: uri)
        defer { _ = server.stop() }
        try server.addUser("alice")
        let token = try #require(try server.login()["token"] as? String)

        let stalled = try StoppedPostgresBackends(uri)
        defer { stalled.resume() }
        #expect(!stalled.pids.isEmpty)

        // The token's first verify: its head is not yet marked presented, so it reads.
        let verifier = try HTTPConnection(port: server.port, timeoutSeconds: 30)
        defer { verifier.close() }
        try verifier.send("GET /v1/verify HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer \(token)\r\n\r\n")
        // The loop answers others meanwhile: for 2 s, each request within a second.
        let until = ContinuousClock.now + .seconds(2)
        var answered = 0
        while ContinuousClock.now < until {
            for path in ["/healthz", "/metrics"] {
                let started = ContinuousClock.now
                let connection = try HTTPConnection(port: server.port, timeoutSeconds: 1)
                defer { connection.close() }
                let status = (try? connection.request("GET", path))?.status ?? 0
                #expect(status == 200, "\(path) after \(ContinuousClock.now - started), \(answered) answered before")
                if status != 200 { break }
                answered += 1
            }
        }
        #expect(answered >= 4)

        stalled.resume()
        let answer = try verifier.readResponse()
        // 200 if the backends went on before the connection's answer deadline, else 503.
        #expect([200, 503].contains(answer.status), "\(answer.status) \(answer.text)")
        #expect(try eventually(within: 15) { try server.request("GET", "/v1/verify", token: token).status == 200 })
    }
}

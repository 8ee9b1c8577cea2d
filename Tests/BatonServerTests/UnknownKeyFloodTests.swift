import BatonTestSupport
import Foundation
import Glibc
import Testing

/// Issue 43, finding 1: a made-up `bt2_` token naming a key id no instance has (0xFFFFFFF0)
/// used to make its request read the token key ring from the database, on the event loop and
/// under one lock, so a flood of them queued every other user's verify behind those reads.
/// Now no request reads the ring: the token is refused from this process's copy, and a
/// watcher thread keeps the copy current.
@Suite struct UnknownKeyFloodTests {
    /// A `bt2_` token of the right form naming `keyID`, with a random body and MAC.
    static func forged(keyID: UInt32) -> String {
        var body: [UInt8] = withUnsafeBytes(of: keyID.bigEndian) { Array($0) }
        body += (0..<60).map { _ in UInt8.random(in: 0...255) }
        let base64 = Data(body).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "bt2_" + base64
    }

    /// One event loop on PostgreSQL, its backends stopped (SIGSTOP: a stalled database). For
    /// 2 s, forged tokens naming an unknown key are answered at once, and so is every other
    /// request on the same loop (the honest user's verify from memory while memory is trusted,
    /// /healthz throughout): nothing waits for the ring.
    /// (Before: the forged token's request read the ring on the loop; with the database
    /// stalled, it and every request behind it on that loop waited for the answer deadline.)
    @Test func aForgedUnknownKeyTokenWaitsForNothingWhileTheDatabaseStalls() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let key = try SharedKeyFile()
        let server = try ServerProcess(["--access-log", "off", "--event-loops", "1", "--key-file", key.path], database: uri)
        defer { _ = server.stop() }
        try server.addUser("alice")
        let token = try #require(try server.login()["token"] as? String)
        // Verified once and marked presented: the next verifies are answered from memory.
        #expect(try eventually(within: 10) { try server.request("GET", "/v1/verify", token: token).status == 200 })

        let stalled = try StoppedPostgresBackends(uri)
        defer { stalled.resume() }
        #expect(!stalled.pids.isEmpty)

        let until = ContinuousClock.now + .seconds(2)
        var rounds = 0
        while ContinuousClock.now < until {
            let forged = try HTTPConnection(port: server.port, timeoutSeconds: 1)
            defer { forged.close() }
            let refused = try? forged.request("GET", "/v1/verify", token: Self.forged(keyID: 0xFFFF_FFF0))
            // 401 token_invalid while this copy of the ring is young; 503 (retry) once the
            // watcher has not read it for 1.5 s (it cannot: the database is stopped).
            #expect([401, 503].contains(refused?.status ?? 0), "round \(rounds): \(refused?.text ?? "no answer within 1 s")")
            if rounds == 0 { #expect(refused?.status == 401 && refused?.text.contains("token_invalid") == true, "\(refused?.text ?? "")") }
            let other = try HTTPConnection(port: server.port, timeoutSeconds: 1)
            defer { other.close() }
            // The first round, while memory is trusted (HeadWatch's bound after the last
            // heartbeat), the honest user's verify; then /healthz (a verify then waits for
            // the stopped database on a worker, by design, and the loop goes on).
            let accepted = rounds == 0 ? try? other.request("GET", "/v1/verify", token: token) : try? other.request("GET", "/healthz")
            #expect(accepted?.status == 200, "round \(rounds): \(accepted?.text ?? "no answer within 1 s")")
            if refused == nil || accepted?.status != 200 { break }
            rounds += 1
        }
        #expect(rounds >= 5)
    }

    /// On SQLite, through the whole server: 300 forged unknown-key tokens are refused
    /// (`token_invalid`) and the ring is read only by the watcher meanwhile (about once a
    /// second), never once per forged token.
    @Test func forgedUnknownKeyTokensReadTheRingNoMoreThanTheWatcherDoes() throws {
        let server = try ServerProcess(["--access-log", "off"])
        defer { _ = server.stop() }
        func ringReads() throws -> Int {
            let text = try server.request("GET", "/metrics").text
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("baton_token_key_ring_reads_total ") })
            return try #require(Int(line.split(separator: " ")[1]))
        }
        let before = try ringReads()
        let started = ContinuousClock.now
        let connection = try HTTPConnection(port: server.port, timeoutSeconds: 10)
        defer { connection.close() }
        for keyID in 1...300 {
            let answer = try connection.request("GET", "/v1/verify", token: Self.forged(keyID: UInt32(keyID) * 1000))
            #expect(answer.status == 401 && answer.text.contains("token_invalid"), "\(answer.status) \(answer.text)")
        }
        let seconds = Int((ContinuousClock.now - started).components.seconds)
        let reads = try ringReads() - before
        #expect(reads <= seconds + 2, "\(reads) reads of the ring in \(seconds) s for 300 forged tokens")
    }
}

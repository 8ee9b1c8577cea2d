import Foundation
import Glibc
import Synchronization
import Testing

/// Another process holds the database (an operator's sqlite3 shell): verify keeps answering
/// correctly from the WAL readers; exchanges wait at most the busy timeout (5 s), then
/// succeed or answer 503, never a wrong answer, never a hang.
@Suite(.serialized)
struct OperatorLockTests {
    let server: ServerProcess
    var heads: [Int64: Acknowledged] = [:]
    var firstTokens: [Int64: String] = [:]

    init() throws {
        server = try ServerProcess()
        try server.addUser("alice")
        for device in 0..<2 {
            let bundle = try server.login(device: "phone-\(device)")
            let first = bundle["token"] as! String
            let exchanged = try server.request("POST", "/v1/exchange", token: first)
            let chain = chainDatabaseID(bundle["chain_id"] as! String)!
            heads[chain] = Acknowledged(generation: exchanged.json["generation"] as! Int, token: exchanged.json["token"] as! String)
            firstTokens[chain] = first
        }
    }

    /// Verify answers for the heads, a superseded token and a forged one, each timed.
    func expectVerifyAnswersCorrectly() throws -> Duration {
        let clock = ContinuousClock()
        var slowest: Duration = .zero
        for (chain, ack) in heads {
            let started = clock.now
            let head = try server.request("GET", "/v1/verify", token: ack.token)
            let superseded = try server.request("GET", "/v1/verify", token: firstTokens[chain]!)
            let forged = try server.request("GET", "/v1/verify", token: String(ack.token.dropLast()) + (ack.token.hasSuffix("A") ? "B" : "A"))
            slowest = max(slowest, (clock.now - started) / 3)
            #expect(head.status == 200 && head.json["device_id"] != nil, "\(head.text)")
            #expect(superseded.error == "token_superseded", "\(superseded.text)")
            #expect(forged.error == "token_invalid", "\(forged.text)")
        }
        return slowest
    }

    @Test mutating func aHeldWriteLockDelaysExchangesBoundedlyAndVerifyKeepsAnswering() throws {
        let shell = try SQLiteShell(server.databasePath)
        try shell.run("BEGIN IMMEDIATE;")
        let slowestVerify = try expectVerifyAnswersCorrectly()
        #expect(slowestVerify < .seconds(1), "verify took \(slowestVerify) under a held write lock")

        // Held past the busy timeout: 503 unavailable after about 5 s, no hang, nothing changed.
        let clock = ContinuousClock()
        let (chain, ack) = heads.first!
        let started = clock.now
        let refused = try server.request("POST", "/v1/exchange", token: ack.token)
        let waited = clock.now - started
        #expect(refused.status == 503 && refused.error == "unavailable", "\(refused.text)")
        #expect(waited >= .seconds(4) && waited < .seconds(15), "waited \(waited)")  // the 5 s busy timeout, not a hang
        #expect(try server.request("GET", "/readyz").status == 503)
        // The server says why on its standard output (the answer says only "unavailable").
        let said = eventually(within: 5) {
            server.stdout.split(separator: "\n").contains {
                $0.contains(#""event":"unavailable""#) && $0.contains(#""path":"/v1/exchange""#) && $0.contains("(SQLITE_BUSY)")
            }
        }
        #expect(said, "no unavailable line: \(server.stdout.split(separator: "\n").filter { $0.contains("unavailable") })")

        // Released while an exchange waits: that exchange succeeds.
        let answer = Mutex<HTTPConnection.Response?>(nil)
        let port = server.port
        let token = ack.token
        let exchanging = Thread {
            let response = try? HTTPConnection(port: port).request("POST", "/v1/exchange", token: token)
            answer.withLock { $0 = response }
        }
        exchanging.start()
        usleep(1_000_000)  // the exchange is waiting on the lock (nothing observable to await)
        #expect(answer.withLock { $0 } == nil, "the exchange did not wait for the lock")
        try shell.run("COMMIT;")
        #expect(eventually(within: 10) { answer.withLock { $0 } != nil })
        let exchanged = try #require(answer.withLock { $0 })
        #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == ack.generation + 1, "\(exchanged.text)")
        heads[chain] = Acknowledged(generation: ack.generation + 1, token: exchanged.json["token"] as! String)

        #expect(server.stop() == 0)
        let check = try LineageCheck(databasePath: server.databasePath, acknowledged: heads)
        #expect(check.problems == [] && check.lost == 0)
    }

    /// An exchange waiting on the held lock keeps its connection busy. What the client sends
    /// behind it meanwhile (a verify and a health check) waits in the socket and costs the
    /// server no CPU while it waits: the loop, told once that input came, stops watching it,
    /// instead of being told again on every turn. It is answered in order once the exchange is.
    @Test mutating func inputBehindAWaitingExchangeWaitsWithoutSpinning() throws {
        let shell = try SQLiteShell(server.databasePath)
        try shell.run("BEGIN IMMEDIATE;")
        let (chain, ack) = heads.first!
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("POST /v1/exchange HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(ack.token)\r\nContent-Length: 0\r\n\r\n")
        // The loop has read the exchange (which then waits on the lock) once the server's end
        // of the connection holds no unread byte.
        #expect(eventually(within: 5) { Self.unreadByServer(connection, serverPort: server.port) == 0 })
        let pid = server.process.processIdentifier
        let before = try ProcessStats(pid: pid).cpuSeconds
        let behind = "GET /v1/verify HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(ack.token)\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
        try connection.send(behind)
        usleep(1_000_000)  // a window of the lock's hold (5 s busy timeout), over which the server's CPU is measured
        let spent = try ProcessStats(pid: pid).cpuSeconds - before
        #expect(spent < 0.5, "the server spent \(spent) s of CPU in 1 s while the input waited")
        #expect(Self.unreadByServer(connection, serverPort: server.port) == behind.utf8.count, "the input behind the exchange was read before its answer")
        try shell.run("COMMIT;")
        let exchanged = try connection.readResponse()
        #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == ack.generation + 1, "\(exchanged.text)")
        let superseded = try connection.readResponse()
        #expect(superseded.status == 401 && superseded.error == "token_superseded", "\(superseded.text)")
        #expect(try connection.readResponse().status == 200)
        heads[chain] = Acknowledged(generation: ack.generation + 1, token: try #require(exchanged.json["token"] as? String))
        #expect(server.stop() == 0)
        let check = try LineageCheck(databasePath: server.databasePath, acknowledged: heads)
        #expect(check.problems == [] && check.lost == 0)
    }

    /// The bytes the server has not read yet on `connection`'s other end (its receive queue in
    /// /proc/net/tcp); nil when that socket is not listed.
    static func unreadByServer(_ connection: HTTPConnection, serverPort: UInt16) -> Int? {
        guard let clientPort = connection.localPort, let table = Self.readWhole("/proc/net/tcp") else { return nil }
        let serverEnd = String(format: "0100007F:%04X", serverPort), clientEnd = String(format: "0100007F:%04X", clientPort)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[1] == serverEnd, fields[2] == clientEnd else { continue }
            return fields[4].split(separator: ":").last.flatMap { Int($0, radix: 16) }
        }
        return nil
    }

    /// A /proc file read to its end (its size says 0, and a read of one page would stop short).
    static func readWhole(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test mutating func aLongReadTransactionBlocksNothing() throws {
        let shell = try SQLiteShell(server.databasePath)
        let count = try shell.run("BEGIN; SELECT count(*) FROM chains;")
        #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        _ = try expectVerifyAnswersCorrectly()
        let clock = ContinuousClock()
        for chain in heads.keys.sorted() {
            for _ in 0..<20 {
                let started = clock.now
                let response = try server.request("POST", "/v1/exchange", token: heads[chain]!.token)
                #expect(response.status == 200 && clock.now - started < .seconds(4), "\(response.text)")  // under the 5 s busy timeout: it never waited for the reader
                heads[chain] = Acknowledged(generation: response.json["generation"] as! Int, token: response.json["token"] as! String)
            }
        }
        #expect(try server.request("GET", "/readyz").status == 200)
        // The reader's snapshot is the old one, as SQLite promises; after it ends it sees the new heads.
        #expect(try shell.run("SELECT max(head_generation) FROM chains;").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        try shell.run("COMMIT;")
        #expect(try shell.run("SELECT min(head_generation) FROM chains;").trimmingCharacters(in: .whitespacesAndNewlines) == "21")
        #expect(server.stop() == 0)
        let check = try LineageCheck(databasePath: server.databasePath, acknowledged: heads)
        #expect(check.problems == [] && check.lost == 0)
    }
}

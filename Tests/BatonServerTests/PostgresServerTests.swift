import BatonTestSupport
import Foundation
import Glibc
import Testing

/// The real `baton serve --db postgresql://…` and `baton admin` against a real PostgreSQL
/// database (a fresh one per test in the test process's cluster).
@Suite(.serialized)
struct PostgresServerTests {
    /// A server on a new database with user alice, and the key file it created.
    static func startServer() async throws -> (server: ServerProcess, uri: String, keyPath: String) {
        let server = try await ServerProcess.start(on: .postgresql)
        try await offPool { try server.addUser("alice") }
        return (server, server.databasePath, server.directory + "/baton.key")
    }

    @Test func tokenLifecycleOverHTTP() async throws {
        let (server, _, _) = try await Self.startServer()
        try await offPool {
            defer { server.stop() }  // now, not when the last reference goes (the runner may exit first)
            let first = try server.login()
            let token0 = try #require(first["token"] as? String)
            let exchanged = try server.request("POST", "/v1/exchange", token: token0, headers: [("X-Device-Id", "phone-1")])
            #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == 1)
            let token1 = try #require(exchanged.json["token"] as? String)
            #expect(try server.request("GET", "/v1/verify", token: token1).json["username"] as? String == "alice")
            #expect(try server.request("GET", "/v1/verify", token: token0).error == "token_superseded")
            let confirmed = try server.request("POST", "/v1/confirm", token: token1, json: #"{"password":"correct horse battery"}"#)
            #expect(confirmed.status == 200 && confirmed.json["auth_time"] != nil)
            let wrong = try server.request("POST", "/v1/confirm", token: token1, json: #"{"password":"not the password"}"#)
            #expect(wrong.status == 401 && wrong.error == "invalid_credentials")
            // R3: the consumed token exchanged again (from another device) revokes the chain.
            #expect(try server.request("POST", "/v1/exchange", token: token0, headers: [("X-Device-Id", "thief")]).error == "token_reused")
            #expect(try server.request("GET", "/v1/verify", token: token1).error == "chain_revoked")
            // R6 on a second chain.
            let second = try #require(try server.login(device: "laptop")["token"] as? String)
            #expect(try server.request("POST", "/v1/logout", token: second).status == 204)
            #expect(try server.request("GET", "/v1/verify", token: second).error == "chain_revoked")
            #expect(try server.request("GET", "/readyz").status == 200)
            let metrics = try server.request("GET", "/metrics").text
            #expect(metrics.contains("baton_exchanges_total{kind=\"exchanged\"} 1"))
            #expect(metrics.contains("baton_reuse_detections_total{kind=\"reuse\"} 1"))
            #expect(metrics.contains("baton_postgres_connects_total{outcome=\"succeeded\"}"))
        }
    }

    @Test func aSecondInstanceWithTheSameKeySeesTheSameChains() async throws {
        let (first, uri, keyPath) = try await Self.startServer()
        try await offPool {
            let second = try ServerProcess(["--key-file", keyPath], database: uri)
            defer {
                second.stop()
                first.stop()
            }
            let token0 = try #require(try first.login()["token"] as? String)
            let token1 = try #require(try second.request("POST", "/v1/exchange", token: token0).json["token"] as? String)
            #expect(try first.request("GET", "/v1/verify", token: token1).status == 200)
            // Reuse through the other instance is caught.
            #expect(try first.request("POST", "/v1/exchange", token: token0).error == "token_reused")
            #expect(try second.request("GET", "/v1/verify", token: token1).error == "chain_revoked")
        }
    }

    @Test func aPostgresURIWithoutKeyFileIsRefusedNamingTheFlag() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let (status, _, err) = try await offPool { try runBaton(["serve", "--db", uri, "--listen", "127.0.0.1:0"]) }
        #expect(status == 1)
        #expect(err.contains("--key-file (or BATON_KEY_FILE) is required when --db is a PostgreSQL URI"))
    }

    @Test func anUnreachableServerIsNamedWithoutItsPassword() async throws {
        let reservation = try PortReservation()  // bound, not listening: connections are refused
        defer { reservation.release() }
        let port = reservation.port
        let directory = NSTemporaryDirectory() + "baton-pg-e2e-" + UUID().uuidString
        let uri = "postgresql://baton:sekrit@127.0.0.1:\(port)/baton?connect_timeout=2"
        let (status, _, err) = try await offPool { () throws -> (Int32, String, String) in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            return try runBaton(["serve", "--db", uri, "--key-file", directory + "/k", "--new-key", "--listen", "127.0.0.1:0"])
        }
        #expect(status == 1)
        #expect(err.hasPrefix("Error: cannot use PostgreSQL database postgresql://baton@127.0.0.1:\(port)/baton?connect_timeout=2: "))
        #expect(!err.contains("sekrit"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/k"))  // no key left behind for a database never reached
    }

    @Test func adminCommandsWorkOnAnEmptyDatabaseWithoutAKey() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        try await offPool {
            // Only `user add` makes Baton's tables (as only it makes a SQLite file): a read on a
            // database without them, a mistyped name say, is refused and leaves it untouched.
            #expect(try runBaton(["admin", "user", "list", "--db", uri]) == (1, "",
                "Error: PostgreSQL database \(uri) has no Baton tables (create them with `baton admin user add` or `baton serve`, or check --db / BATON_DB)\n"))
            #expect(try runBaton(["admin", "chains", "--db", uri]).0 == 1)
            let (added, out, _) = try runBaton(["admin", "user", "add", "bob", "--password-stdin", "--db", uri], stdin: "correct horse battery\n")
            #expect(added == 0 && out == "Created user 'bob' (id 1).\n")
            #expect(try runBaton(["admin", "user", "add", "BOB", "--password-stdin", "--db", uri], stdin: "correct horse battery\n")
                == (1, "", "Error: User 'bob' already exists.\n"))
            let (listed, list, listErr) = try runBaton(["admin", "user", "list", "--db", uri])
            #expect(listed == 0 && listErr.isEmpty)
            let rows = list.split(separator: "\n")
            #expect(rows.count == 2 && rows[0] == "NAME  ID  CREATED               DISABLED  LIVE CHAINS" && rows[1].hasPrefix("bob   1   ") && rows[1].hasSuffix("  no        0"), "\(list)")
            #expect(try runBaton(["admin", "chains", "--db", uri]) == (0, "CHAIN  USER  DEVICE  CLASS  GEN  CREATED  LAST EXCHANGE  HEAD EXPIRES  STATE  BOUND TO KEY (JKT)\n", ""))
            let (statsStatus, stats, _) = try runBaton(["admin", "stats", "--db", uri])
            #expect(statsStatus == 0 && stats.hasPrefix("users                        1\nlive chains                  0\n"), "\(stats)")
            #expect(stats.contains("\ndatabase size (PostgreSQL)   ") && stats.hasSuffix(" bytes\n"), "\(stats)")
        }
    }
}

/// Losing the primary: requests are answered 503 `unavailable` quickly (never a wrong answer,
/// never a hang), `/readyz` says not ready, and after the standby is promoted the server
/// finds it through the multi-host URI by itself.
@Suite(.serialized)
struct PostgresOutageTests {
    @Test func killedPrimaryGives503QuicklyAndThePromotedStandbyIsFoundAlone() async throws {
        let cluster = try await PostgresCluster.start(.init(withSynchronousStandby: true))
        let directory = NSTemporaryDirectory() + "baton-pg-e2e-" + UUID().uuidString
        let server = try await offPool { () throws -> ServerProcess in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let server = try ServerProcess(["--key-file", directory + "/baton.key", "--new-key"], directory: directory, database: cluster.failoverURI())
            try server.addUser("alice")
            return server
        }
        try await offPool {
            defer { server.stop() }
            let token0 = try #require(try server.login()["token"] as? String)
            let token1 = try #require(try server.request("POST", "/v1/exchange", token: token0).json["token"] as? String)
            try cluster.killPrimary()
            let started = Date()
            let during = try server.request("POST", "/v1/exchange", token: token1)
            #expect(during.status == 503 && during.error == "unavailable")
            #expect(Date().timeIntervalSince(started) < 15, "a request during the outage must not hang")
            #expect(try server.request("GET", "/readyz").status == 503)
            try cluster.promoteStandby()
            // The first request after promotion connects to the new primary.
            #expect(eventually(within: 30) { (try? server.request("GET", "/readyz").status) == 200 })
            let token2 = try server.request("POST", "/v1/exchange", token: token1)
            #expect(token2.status == 200 && token2.json["generation"] as? Int == 2)
            // The exchange acknowledged before the kill reached the standby: its input is consumed.
            #expect(try server.request("GET", "/v1/verify", token: token0).error == "token_superseded")
        }
    }
}

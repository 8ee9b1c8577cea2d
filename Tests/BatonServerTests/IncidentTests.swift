@testable import BatonCore
import Foundation
import Glibc
import Testing

/// Issue 11, "Incident investigation" and "Polish": a reuse incident as an investigator reads it.
struct IncidentTests {
    /// A server with one reuse incident: login (no X-Device-Id on the exchange), exchange,
    /// then the first token again from 203.0.113.9 with curl.
    /// The incident on a new server of `backend`.
    static func reuseIncident(_ backend: StoreBackend) async throws -> (ServerProcess, chain: String, first: String) {
        let server = try await ServerProcess.start(on: backend)
        return try await offPool { try reuseIncident(on: server) }
    }

    /// The incident on `server`.
    static func reuseIncident(on server: ServerProcess) throws -> (ServerProcess, chain: String, first: String) {
        try server.addUser("alice")
        let login = try server.login(headers: [("User-Agent", "BatonApp/2.3")])
        let first = login["token"] as! String
        #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", "BatonApp/2.3")]).status == 200)
        #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", "curl/7.88.1"), ("X-Forwarded-For", "203.0.113.9")]).error == "token_reused")
        return (server, login["chain_id"] as! String, first)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokeAcceptsEveryWellFormedChainID(_ backend: StoreBackend) async throws {
        let (server, chain, _) = try await Self.reuseIncident(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            #expect(try runBaton(["admin", "revoke", "--chain", "8000000000000000"] + db) == (1, "", "Error: No chain with id 8000000000000000.\n"))
            #expect(try runBaton(["admin", "revoke", "--chain", chain.uppercased()] + db) == (0, "Chain \(chain) was already revoked.\n", ""))
            #expect(try runBaton(["admin", "chain", "show", chain.uppercased()] + db).0 == 0)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func reuseIsReadableInAuditAndAccessLog(_ backend: StoreBackend) async throws {
        let (server, chain, first) = try await Self.reuseIncident(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            let table = try runBaton(["admin", "audit", "--kind", "reuse_detected"] + db).1
            #expect(table.hasPrefix("AT                        KIND            USER   CHAIN             GEN  IP           USER AGENT   DEVICE  DETAIL\n"))
            #expect(table.contains("  curl/7.88.1  "))
            let json = try runBaton(["admin", "audit", "--kind", "reuse_detected", "--format", "json"] + db).1
            let event = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let at = try #require(event["at"] as? String)
            #expect(at.count == 24 && at.hasSuffix("Z") && at.dropFirst(19).hasPrefix("."))  // milliseconds
            let original = try #require((event["detail"] as? [String: Any])?["original"] as? [String: Any])
            #expect(original["device_id"] as? String == "phone-1" && original["device_id_from"] as? String == "chain")
            // The 401's access log line: error code and chain id, never the token.
            #expect(server.stop() == 0)
            let line = try #require(server.stdout.split(separator: "\n").first { $0.contains(#""status":401"#) })
            #expect(line.contains(#""chain_id":"\#(chain)""#) && line.contains(#""error":"token_reused""#) && !line.contains(first))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func auditUntilCoversItsSecondAndTheLimitSaysWhatIsLeft(_ backend: StoreBackend) async throws {
        let (server, _, _) = try await Self.reuseIncident(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            let events = try runBaton(["admin", "audit", "--format", "json"] + db).1.split(separator: "\n")
            let last = try #require(try JSONSerialization.jsonObject(with: Data(events.last!.utf8)) as? [String: Any])
            let at = try #require(last["at"] as? String)
            let wholeSecond = String(at.prefix(19)) + "Z"
            // Pasting the second the table used to show includes the event; the exact time does too.
            #expect(try runBaton(["admin", "audit", "--format", "json", "--until", wholeSecond] + db).1.split(separator: "\n").count == events.count)
            #expect(try runBaton(["admin", "audit", "--format", "json", "--until", at] + db).1.split(separator: "\n").count == events.count)
            let (status, out, err) = try runBaton(["admin", "audit", "--format", "json", "--limit", "2"] + db)
            #expect(status == 0 && out.split(separator: "\n").count == 2)
            #expect(err == "Note: showing the newest 2 of \(events.count) matching events; \(events.count - 2) older not shown. See them with --limit \(events.count), or narrow with --since/--until.\n")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func chainShowDrawsTheWholeLineageWithBothSides(_ backend: StoreBackend) async throws {
        let (server, chain, _) = try await Self.reuseIncident(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            let (status, table, err) = try runBaton(["admin", "chain", "show", chain] + db)
            #expect(status == 0 && err.isEmpty)
            let lines = table.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines[0] == "Chain \(chain) of 'alice', device phone-1 (mobile)")
            #expect(lines[1].hasPrefix("Created ") && lines[1].hasSuffix(" (reuse_detected)"))
            #expect(lines[3].hasPrefix("GEN  ISSUED                    ENDED                     HOW"))
            #expect(lines[4].hasPrefix("0    ") && lines[4].contains("exchanged, REUSED") && lines[4].contains("BatonApp/2.3"))
            #expect(lines[5].hasPrefix("1    ") && lines[5].contains("head (revoked)"))
            #expect(lines[7] == "REUSE of generation 0:")
            #expect(lines[9].hasPrefix("  original  ") && lines[9].contains("127.0.0.1"))
            #expect(lines[10].hasPrefix("  attempt   ") && lines[10].contains("203.0.113.9") && lines[10].contains("curl/7.88.1"))

            let json = try JSONSerialization.jsonObject(with: Data(try runBaton(["admin", "chain", "show", chain, "--format", "json"] + db).1.utf8)) as? [String: Any]
            #expect((json?["tokens"] as? [Any])?.count == 2 && (json?["incidents"] as? [[String: Any]])?.first?["kind"] as? String == "reuse_detected")
            // The original side says where its device id comes from, as the reuse_detected detail does.
            let original = (json?["incidents"] as? [[String: Any]])?.first?["original"] as? [String: Any]
            #expect(original?["device_id"] as? String == "phone-1" && original?["device_id_from"] as? String == "chain")

            let html = try runBaton(["admin", "chain", "show", chain, "--format", "html"] + db).1
            #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("<svg ") && html.contains("<style>"))
            #expect(html.contains("203.0.113.9") && html.contains(">REUSE<"))
            // Self-contained: nothing fetched, nothing run.
            for outside in ["<script", "src=", "<link", "url(", "http://", "https://"] where outside != "http://" {
                #expect(!html.contains(outside), "\(outside)")
            }
            #expect(html.components(separatedBy: "http://").count == 2 && html.contains(#"xmlns="http://www.w3.org/2000/svg""#))  // only the SVG namespace
            #expect(try runBaton(["admin", "chain", "show", "0000000000000001"] + db) == (1, "", "Error: No chain with id 0000000000000001.\n"))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func userDisableTwiceWritesOneEventAndAddNamesTheStoredName(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            let db = ["--db", server.databasePath]
            #expect(try runBaton(["admin", "user", "disable", "ALICE"] + db) == (0, "Disabled 'alice'; revoked 0 chains.\n", ""))
            #expect(try runBaton(["admin", "user", "disable", "alice"] + db) == (0, "User 'alice' is already disabled; nothing changed.\n", ""))
            #expect(try runBaton(["admin", "audit", "--kind", "user_disabled", "--format", "json"] + db).1.split(separator: "\n").count == 1)
            #expect(try runBaton(["admin", "user", "enable", "alice"] + db) == (0, "Enabled 'alice'.\n", ""))
            // --user matches names case-insensitively, as the accounts do.
            let kinds = try runBaton(["admin", "audit", "--user", "ALICE", "--format", "json"] + db).1.split(separator: "\n")
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["kind"] as? String }
            #expect(kinds == ["user_created", "user_disabled", "user_enabled"])
            #expect(try runBaton(["admin", "user", "enable", "alice"] + db) == (0, "User 'alice' is already enabled; nothing changed.\n", ""))
            #expect(try runBaton(["admin", "user", "add", "Alice", "--password-stdin"] + db, stdin: "another password\n") == (1, "", "Error: User 'alice' already exists.\n"))
        }
    }

    /// Every help text: each line fits 80 columns, and `--help` is listed once.
    @Test func everyHelpTextFits80ColumnsWithOneHelpLine() throws {
        var commands: [[String]] = [["--help"], ["serve", "--help"], ["admin", "--help"], ["admin", "user", "--help"], ["admin", "chain", "--help"]]
        commands += AdminCommandTests.subcommands.map { ["admin"] + $0.split(separator: " ").map(String.init) + ["--help"] }
        for command in commands {
            let (status, out, err) = try runBaton(command)
            #expect(status == 0 && err.isEmpty, "\(command)")
            for line in out.split(separator: "\n") { #expect(line.count <= 80, "\(command): \(line)") }
            #expect(out.components(separatedBy: "--help ").count - 1 <= 1 + (out.contains("<subcommand> --help") ? 1 : 0), "\(command)")
            #expect(out.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--help") }.isEmpty, "\(command)")
        }
        #expect(try runBaton(["admin", "user"]).1 == (try runBaton(["admin", "user", "--help"]).1))
    }
}

import Foundation
import Glibc
import Testing

/// `baton admin revoke --all`: every chain ends, the operator's reason is in the audit trail,
/// and nothing happens without a confirmation (typed at the terminal, or `--yes`).
struct RevokeAllTests {
    static let usage = "Usage: baton admin revoke (--chain <id> | --user <name> | --all) [<options>]\n  See 'baton admin revoke --help'.\n"

    /// A server with two users, each with a live chain; returns the server and their tokens.
    func serverWithTwoLiveChains(_ backend: StoreBackend = .sqlite) async throws -> (ServerProcess, [String]) {
        let server = try await ServerProcess.start(on: backend)
        return try await offPool { try Self.twoLiveChains(on: server) }
    }

    /// Adds alice and bob to `server` and logs each in once.
    static func twoLiveChains(on server: ServerProcess) throws -> (ServerProcess, [String]) {
        try server.addUser("alice")
        try server.addUser("bob")
        let tokens = try ["alice", "bob"].map { try server.login($0)["token"] as! String }
        return (server, tokens)
    }

    @Test(arguments: [
        (["--all"], "Error: '--all' needs '--reason <text>': say why, for the audit trail.\n"),
        (["--all", "--reason", ""], "Error: Invalid value '' for '--reason <text>': expected 1-200 characters, no control characters.\n"),
        (["--all", "--reason", "a\tb", "--yes"], "Error: Invalid value 'a\tb' for '--reason <text>': expected 1-200 characters, no control characters.\n"),
        (["--all", "--user", "alice", "--reason", "x"], "Error: Give exactly one of '--chain <id>', '--user <name>' and '--all'.\n"),
        (["--user", "alice", "--yes"], "Error: '--yes' applies only to '--all'.\n"),
        (["--all", "--reason", "restore"],
         "Error: Refusing to revoke every chain without confirmation: standard input is not a terminal. Pass --yes to confirm.\n"),
    ])
    func refusesWithoutReasonOrConfirmationAndRevokesNothing(_ arguments: [String], _ message: String) async throws {
        let (server, tokens) = try await serverWithTwoLiveChains()
        try await offPool { () throws in
            #expect(try runBaton(["admin", "revoke"] + arguments + ["--db", server.databasePath]) == (64, "", message + Self.usage))
            for token in tokens { #expect(try server.request("GET", "/v1/verify", token: token).status == 200) }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func withYesRevokesEveryChainAndRecordsTheReason(_ backend: StoreBackend) async throws {
        let (server, tokens) = try await serverWithTwoLiveChains(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let (status, out, err) = try runBaton(["admin", "revoke", "--all", "--reason", "restored backup", "--yes", "--db", server.databasePath])
            #expect(status == 0 && err.isEmpty)
            #expect(out == "Revoked 2 chains (reason admin: restored backup); every user must log in again.\n")
            for token in tokens {
                let answer = try server.request("GET", "/v1/verify", token: token)
                #expect(answer.error == "chain_revoked" && answer.json["reason"] as? String == "admin")
                #expect(try server.request("POST", "/v1/exchange", token: token).error == "chain_revoked")
            }
            let events = try runBaton(["admin", "audit", "--kind", "chain_revoked", "--format", "json", "--db", server.databasePath]).1
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(events.count == 2)
            for event in events {
                #expect(event["detail"] as? [String: String] == ["reason": "admin", "note": "restored backup", "scope": "all"])
            }
            // A second run finds nothing left, and a new login works.
            #expect(try runBaton(["admin", "revoke", "--all", "--reason", "again", "--yes", "--db", server.databasePath]).1
                == "Revoked 0 chains (reason admin: again); every user must log in again.\n")
            #expect(try server.request("GET", "/v1/verify", token: server.login()["token"] as? String).status == 200)
        }
    }

    /// A targeted revocation keeps its chain as evidence past the retention; `--all` does not
    /// (after a restore it would keep every chain forever).
    @Test(arguments: StoreBackend.allCases)
    func pruneKeepsATargetedRevocationButNotRevokeAll(_ backend: StoreBackend) async throws {
        let (server, _) = try await serverWithTwoLiveChains(backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            #expect(try runBaton(["admin", "revoke", "--user", "bob", "--reason", "phone stolen"] + db).0 == 0)
            #expect(try runBaton(["admin", "revoke", "--all", "--reason", "restore", "--yes"] + db).1.hasPrefix("Revoked 1 chain "))
            let (status, out, err) = try runBaton(["admin", "prune", "--older-than", "0"] + db)
            #expect(status == 0 && out.hasPrefix("Pruned 1 chain, ") && out.contains("\nKept 1 chain with security events"), "\(out)\(err)")
            let left = try runBaton(["admin", "chains", "--all"] + db).1.split(separator: "\n").dropFirst()
            #expect(left.count == 1 && left.allSatisfy { $0.contains(" bob ") }, "\(left)")
        }
    }

    /// At a terminal (a pseudo-terminal from script(1)), only the typed word `yes` confirms.
    @Test(arguments: StoreBackend.allCases, [("no\n", false), ("\n", false), ("yes\n", true)])
    func atATerminalAsksFirst(_ backend: StoreBackend, _ answer: (typed: String, confirms: Bool)) async throws {
        let (server, tokens) = try await serverWithTwoLiveChains(backend)
        let (typed, confirms) = answer
        try await offPool { () throws in
            defer { server.stop() }
            let (status, text) = try revokeAllAtATerminal(server, typing: typed)
            #expect(text.contains("Revoke all 2 chains? Every user must log in again. Type 'yes' to confirm: "), "\(text)")
            #expect(status == (confirms ? 0 : 1), "\(text)")
            #expect(text.contains(confirms ? "Revoked 2 chains" : "Error: Not confirmed; nothing was revoked."), "\(text)")
            for token in tokens {
                #expect(try server.request("GET", "/v1/verify", token: token).status == (confirms ? 401 : 200))
            }
        }
    }

    @Test func atATerminalWithNoLiveChainsSaysSoWithoutAsking() throws {
        let server = try ServerProcess()
        try server.addUser("alice")
        let (status, text) = try revokeAllAtATerminal(server, typing: "")
        #expect(status == 0 && text.replacingOccurrences(of: "\r\n", with: "\n") == "No live chains: nothing to revoke.\n", "\(text)")
    }

    /// Runs `revoke --all` under `script` (a pseudo-terminal), types `typed`, and returns the
    /// exit status and everything the terminal showed.
    func revokeAllAtATerminal(_ server: ServerProcess, typing typed: String) throws -> (Int32, String) {
        let command = "\(batonBinary) admin revoke --all --reason incident --db \(server.databasePath)"
        let script = ChildProcess()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        script.arguments = ["--quiet", "--return", "--command", command, "/dev/null"]
        let input = Pipe(), output = Pipe()
        script.standardInput = input
        script.standardOutput = output
        try script.run()
        input.fileHandleForWriting.write(Data(typed.utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        script.waitUntilExit()
        return (script.terminationStatus, text)
    }
}

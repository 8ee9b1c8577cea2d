@testable import BatonCore
import Foundation
import Glibc
import Testing

/// `baton admin …` run as a binary: exact output and exit codes, and the operator's session
/// against a live server on the same database.
struct AdminCommandTests {
    static let subcommands = ["user add", "user passwd", "user disable", "user enable", "user list", "chains", "chain show", "revoke", "audit", "stats", "prune", "migrate"]

    @Test func adminHelpListsEverySubcommand() throws {
        let (status, out, err) = try runBaton(["admin", "--help"])
        #expect(status == 0 && err.isEmpty)
        #expect(out.hasPrefix("OVERVIEW: Manage users, chains and the audit trail.\n\nEvery subcommand works on the database a running `baton serve` uses.\n\nUSAGE: baton admin <subcommand>\n\nOPTIONS:\n  -h, --help                    Show help information.\n\nSUBCOMMANDS:\n  user add                      Create a user.\n"))
        for path in Self.subcommands { #expect(out.contains("\n  \(path) "), "\(path)") }
        #expect(out.hasSuffix("\n  See 'baton admin <subcommand> --help' for detailed help.\n"))
        #expect(try runBaton(["admin"]).1 == out)
    }

    @Test(arguments: subcommands)
    func everySubcommandHasHelp(_ path: String) throws {
        let words = path.split(separator: " ").map(String.init)
        let (status, out, err) = try runBaton(["admin"] + words + ["--help"])
        #expect(status == 0 && err.isEmpty)
        #expect(out.hasPrefix("OVERVIEW: "))
        #expect(out.contains("\nUSAGE: baton admin \(path)"))
        #expect(out.contains("\nOPTIONS:\n"))
        #expect(out.contains("--db <path>"))
        #expect(out.hasSuffix("  -h, --help                    Show help information.\n"))
    }

    @Test func userAddHelpIsExact() throws {
        #expect(try runBaton(["admin", "user", "add", "--help"]).1 == """
            OVERVIEW: Create a user.

            Without --password-stdin, the password is asked twice at the terminal,
            without echo. Passwords need 8 to 1024 bytes of UTF-8. Names are
            case-insensitive: 'Alice' and 'alice' are one user. Creates the database
            when missing, together with its key file (keep both; back them up together).

            USAGE: baton admin user add <name> [--password-stdin] [--db <path>] [--key-file
                   <path>]

            ARGUMENTS:
              <name>                        1-64 letters, digits and . _ @ + -

            OPTIONS:
              --password-stdin              Read the password from the first line of
                                            standard input.
              --db <path>                   SQLite database, or a postgresql:// URI.
                                            (default: ./baton.db, or BATON_DB)
              --key-file <path>             Key file made with a new database. (default:
                                            <db>.key, or BATON_KEY_FILE)
              -h, --help                    Show help information.

            """)
    }

    @Test(arguments: [
        (["frobnicate"], "Error: Unknown subcommand 'frobnicate'.\nUsage: baton admin <subcommand>\n  See 'baton admin --help'.\n"),
        (["user", "rename"], "Error: Unknown subcommand 'user rename'.\nUsage: baton admin <subcommand>\n  See 'baton admin --help'.\n"),
        (["user", "disable"], "Error: Missing expected argument '<name>'.\nUsage: baton admin user disable <name> [--db <path>]\n  See 'baton admin user disable --help'.\n"),
        (["user", "enable", "a", "b"], "Error: Unexpected argument 'b'.\nUsage: baton admin user enable <name> [--db <path>]\n  See 'baton admin user enable --help'.\n"),
        (["user", "list", "--colour"], "Error: Unknown option '--colour'.\nUsage: baton admin user list [--db <path>]\n  See 'baton admin user list --help'.\n"),
        (["revoke"], "Error: Give exactly one of '--chain <id>', '--user <name>' and '--all'.\nUsage: baton admin revoke (--chain <id> | --user <name> | --all) [<options>]\n  See 'baton admin revoke --help'.\n"),
        (["revoke", "--chain", "xyz"], "Error: Invalid value 'xyz' for '--chain <id>': expected 16 hex digits.\nUsage: baton admin revoke (--chain <id> | --user <name> | --all) [<options>]\n  See 'baton admin revoke --help'.\n"),
        (["prune", "--older-than", "soon"], "Error: Invalid value 'soon' for '--older-than <duration>': expected a duration such as 90d.\nUsage: baton admin prune [--older-than <duration>] [--dry-run] [--include-security-events] [--db <path>]\n  See 'baton admin prune --help'.\n"),
        (["chains", "--user"], "Error: Missing value for '--user <name>'.\nUsage: baton admin chains [--user <name>] [--all] [--db <path>]\n  See 'baton admin chains --help'.\n"),
    ])
    func usageErrorsExit64WithUsageAndHint(_ arguments: [String], _ expected: String) throws {
        #expect(try runBaton(["admin"] + arguments) == (64, "", expected))
    }

    @Test(arguments: [
        (["--kind", "party"], "Invalid value 'party' for '--kind <kind>'"),
        (["--since", "last week"], "Invalid value 'last week' for '--since <dur|time>'"),
        (["--until", "1h"], "Invalid value '1h' for '--until <time>'"),
        (["--limit", "0"], "Invalid value '0' for '--limit <n>'"),
        (["--format", "xml"], "Invalid value 'xml' for '--format <table|json>'"),
    ])
    func auditUsageErrors(_ arguments: [String], _ message: String) throws {
        let (status, out, err) = try runBaton(["admin", "audit"] + arguments)
        #expect(status == 64 && out.isEmpty)
        #expect(err.hasPrefix("Error: \(message)") && err.hasSuffix("\n  See 'baton admin audit --help'.\n"))
    }

    @Test func failuresExit1() throws {
        let directory = NSTemporaryDirectory() + "baton-admin-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db"
        #expect(try runBaton(["admin", "user", "list", "--db", db]) == (1, "", "Error: database \(db) not found (create it with `baton admin user add`, or check --db / BATON_DB)\n"))
        let other = directory + "/other.db"
        #expect(FileManager.default.createFile(atPath: other, contents: Data("not a database at all, just text".utf8)))
        let (status, _, err) = try runBaton(["admin", "stats", "--db", other])
        #expect(status == 1 && err == "Error: database \(other) is not a SQLite database (another file, or damaged) (SQLITE_NOTADB)\n")
    }

    @Test(arguments: StoreBackend.allCases)
    func unknownUsersAndChainsExit1(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool { () throws in
            defer { server.stop() }
            let db = ["--db", server.databasePath]
            try server.addUser("alice")
            for arguments in [["user", "disable", "bob"], ["user", "enable", "bob"], ["revoke", "--user", "bob"], ["chains", "--user", "bob"]] {
                #expect(try runBaton(["admin"] + arguments + db) == (1, "", "Error: No user named 'bob'.\n"), "\(arguments)")
            }
            #expect(try runBaton(["admin", "user", "passwd", "bob", "--password-stdin"] + db, stdin: "a new long password\n") == (1, "", "Error: No user named 'bob'.\n"))
            #expect(try runBaton(["admin", "revoke", "--chain", "00000000000000ff"] + db) == (1, "", "Error: No chain with id 00000000000000ff.\n"))
            #expect(try runBaton(["admin", "chain", "show", "00000000000000ff"] + db) == (1, "", "Error: No chain with id 00000000000000ff.\n"))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func operatorSessionAgainstARunningServer(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--max-chains-per-user", "0"])
        try await offPool { try Self.operatorSession(server) }
    }

    /// The operator's session: audit, chains, revoke, passwd, disable, enable, stats, prune.
    static func operatorSession(_ server: ServerProcess) throws {
        defer { server.stop() }
        let db = ["--db", server.databasePath]
        try server.addUser("alice")
        // Log in, exchange, then reuse the first token from elsewhere.
        let first = try server.login()["token"] as! String
        let second = try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", "App/2.0"), ("X-Device-Id", "phone-1")]).json["token"] as! String
        #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("X-Forwarded-For", "203.0.113.99")]).error == "token_reused")
        #expect(try server.request("GET", "/v1/verify", token: second).json["reason"] as? String == "reuse_detected")

        let (status, out, _) = try runBaton(["admin", "audit", "--kind", "reuse_detected", "--format", "json"] + db)
        #expect(status == 0)
        let lines = out.split(separator: "\n")
        #expect(lines.count == 1)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(event["kind"] as? String == "reuse_detected" && event["username"] as? String == "alice" && event["ip"] as? String == "203.0.113.99")
        let detail = try #require(event["detail"] as? [String: Any])
        let original = try #require(detail["original"] as? [String: Any]), attempt = try #require(detail["attempt"] as? [String: Any])
        #expect(original["ip"] as? String == "127.0.0.1" && original["user_agent"] as? String == "App/2.0" && original["device_id"] as? String == "phone-1")
        #expect(attempt["ip"] as? String == "203.0.113.99" && (original["at"] as? String).flatMap(RFC3339.parse) != nil)

        let chains = try runBaton(["admin", "chains", "--user", "alice", "--all"] + db).1
        #expect(chains.contains("revoked (reuse_detected)"))
        #expect(try runBaton(["admin", "chains", "--user", "alice"] + db).1.split(separator: "\n").count == 1)  // header only: nothing live

        // revoke --user: the user's live tokens now fail verify with chain_revoked/admin.
        let live = try (0..<2).map { try server.login(device: "d\($0)")["token"] as! String }
        let revoked = try runBaton(["admin", "revoke", "--user", "alice"] + db)
        #expect(revoked.0 == 0 && revoked.1.hasPrefix("Revoked 2 chains of 'alice': "))
        for token in live {
            let answer = try server.request("GET", "/v1/verify", token: token)
            #expect(answer.error == "chain_revoked" && answer.json["reason"] as? String == "admin")
        }
        #expect(try server.request("GET", "/healthz").status == 200)

        // user passwd: revokes (password_changed); the old password stops working.
        let beforePasswd = try server.login()["token"] as! String
        #expect(try runBaton(["admin", "user", "passwd", "alice", "--password-stdin"] + db, stdin: "a new long password\n") == (0, "Changed the password of 'alice'; revoked 1 chain.\n", ""))
        #expect(try server.request("GET", "/v1/verify", token: beforePasswd).json["reason"] as? String == "password_changed")
        #expect(try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse battery","device_id":"d"}"#).error == "invalid_credentials")
        let afterPasswd = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"a new long password","device_id":"d"}"#)
        #expect(afterPasswd.status == 200)

        // user disable / enable.
        #expect(try runBaton(["admin", "user", "disable", "alice"] + db) == (0, "Disabled 'alice'; revoked 1 chain.\n", ""))
        #expect(try server.request("GET", "/v1/verify", token: afterPasswd.json["token"] as? String).json["reason"] as? String == "user_disabled")
        #expect(try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"a new long password","device_id":"d"}"#).error == "account_disabled")
        #expect(try runBaton(["admin", "user", "list"] + db).1.contains("alice  1   "))
        #expect(try runBaton(["admin", "user", "enable", "alice"] + db) == (0, "Enabled 'alice'.\n", ""))
        #expect(try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"a new long password","device_id":"d"}"#).status == 200)

        // Every event parses as JSON; no output ever shows a token or a password hash.
        let all = try runBaton(["admin", "audit", "--format", "json", "--limit", "1000"] + db).1
        for line in all.split(separator: "\n") { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil) }
        let stats = try runBaton(["admin", "stats"] + db)
        #expect(stats.0 == 0 && stats.1.contains("reuse detections, last hour  1\n"))
        var printed = all + stats.1 + chains
        printed += try runBaton(["admin", "audit"] + db).1 + runBaton(["admin", "user", "list"] + db).1
        for token in [first, second, beforePasswd] + live { #expect(!printed.contains(token)) }
        #expect(!printed.contains("$argon2id") && !printed.contains("a new long password"))

        // prune: with no retention every ended chain goes, with its lineage and events, except
        // the evidence: the reused chain and the two an operator revoked stay until asked.
        let dryRun = try runBaton(["admin", "prune", "--older-than", "0", "--dry-run"] + db)
        #expect(dryRun.0 == 0 && dryRun.1.hasPrefix("Would prune 2 chains, 0 lineage rows and "))
        #expect(dryRun.1.contains(" (dry run: nothing deleted).\nWould keep 3 chains with security events as evidence; --include-security-events prunes them too.\n"))
        #expect(try runBaton(["admin", "chains", "--all"] + db).1.split(separator: "\n").count == 7)  // nothing deleted
        let pruned = try runBaton(["admin", "prune", "--older-than", "0"] + db)
        #expect(pruned.0 == 0 && pruned.1.hasPrefix("Pruned 2 chains, 0 lineage rows and ") && pruned.1.contains("\nKept 3 chains with security events"))
        #expect(try runBaton(["admin", "audit", "--kind", "reuse_detected"] + db).1.split(separator: "\n").count == 2)  // the evidence is still there
        let all3 = try runBaton(["admin", "prune", "--older-than", "0", "--include-security-events"] + db)
        #expect(all3.0 == 0 && all3.1.hasPrefix("Pruned 3 chains, 1 lineage row and ") && !all3.1.contains("Kept"))
        #expect(try runBaton(["admin", "chains", "--all"] + db).1.split(separator: "\n").count == 2)  // header + the live one
        #expect(try server.request("GET", "/healthz").status == 200)
    }

    @Test(arguments: StoreBackend.allCases)
    func auditFollowPrintsEventsThatHappenAfterItStarted(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool { try Self.followAudit(server) }
    }

    /// `audit --follow` started before a login prints the login's event.
    static func followAudit(_ server: ServerProcess) throws {
        defer { server.stop() }
        try server.addUser("alice")
        let follower = ChildProcess()
        follower.executableURL = URL(fileURLWithPath: batonBinary)
        follower.arguments = ["admin", "audit", "--follow", "--format", "json", "--kind", "login_succeeded", "--db", server.databasePath]
        let pipe = Pipe()
        follower.standardOutput = pipe
        try follower.run()
        try pipe.fileHandleForWriting.close()  // only the child writes
        defer {
            follower.terminate()
            follower.waitUntilExit()
        }
        let chain = try server.login()["chain_id"] as! String
        // Read until the new event arrives; poll with a deadline so a missing event fails, not hangs.
        let seen = readPipe(pipe.fileHandleForReading.fileDescriptor, until: { $0.contains(chain) }, seconds: 10)
        #expect(seen.contains(#""chain_id":"\#(chain)""#))
        #expect(seen.contains(#""kind":"login_succeeded""#))
    }
}

/// Reads `fd` until `done` holds for what was read, end of stream, or the deadline.
func readPipe(_ fd: Int32, until done: (String) -> Bool, seconds: Double) -> String {
    var text = ""
    let deadline = Date().addingTimeInterval(seconds)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !done(text) {
        let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
        guard remaining > 0 else { break }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, remaining) > 0 else { continue }
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        text += String(decoding: buffer[..<count], as: UTF8.self)
    }
    return text
}

struct ScheduledPruneTests {
    @Test(arguments: StoreBackend.allCases)
    func serverPrunesEndedChainsOnItsSchedule(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--prune-every", "200ms", "--retention", "0"])
        try await offPool { try Self.prunesOnSchedule(server) }
    }

    @Test(arguments: StoreBackend.allCases)
    func scheduledPruneKeepsChainsWithSecurityEvents(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--prune-every", "200ms", "--retention", "0"])
        try await offPool { try Self.keepsEvidenceOnSchedule(server) }
    }

    /// A logged-out chain disappears on a later scheduled run; the live one stays.
    static func prunesOnSchedule(_ server: ServerProcess) throws {
        defer { server.stop() }
        try server.addUser("alice")
        let ended = try server.login(device: "old")
        let kept = try server.login(device: "new")["token"] as! String
        #expect(try server.request("POST", "/v1/logout", token: ended["token"] as? String).status == 204)
        // The logged-out chain disappears on a later run; the live one stays.
        #expect(try eventually(within: 20) { !(try runBaton(["admin", "chains", "--all", "--db", server.databasePath]).1.contains(ended["chain_id"] as! String)) })
        #expect(try server.request("GET", "/v1/verify", token: kept).status == 200)
        #expect(server.stop() == 0)
        #expect(server.stdout.contains(#""event":"pruned""#))
    }

    /// The scheduled prune keeps a chain an operator revoked, run after run.
    static func keepsEvidenceOnSchedule(_ server: ServerProcess) throws {
        defer { server.stop() }
        try server.addUser("alice")
        let ended = try server.login(device: "old")["chain_id"] as! String
        let evidence = try server.login(device: "stolen")["chain_id"] as! String
        #expect(try runBaton(["admin", "revoke", "--chain", evidence, "--db", server.databasePath]).0 == 0)
        let logout = try server.login(device: "old2")
        #expect(try server.request("POST", "/v1/logout", token: logout["token"] as? String).status == 204)
        // The logged-out chain goes; the one an operator revoked stays as evidence, run after run.
        #expect(try eventually(within: 20) { !(try runBaton(["admin", "chains", "--all", "--db", server.databasePath]).1.contains(logout["chain_id"] as! String)) })
        let chains = try runBaton(["admin", "chains", "--all", "--db", server.databasePath]).1
        #expect(chains.contains(evidence) && chains.contains(ended))
        #expect(try runBaton(["admin", "chain", "show", evidence, "--db", server.databasePath]).0 == 0)
        #expect(server.stop() == 0)
        #expect(server.stdout.contains(#""kept_chains":1"#))
    }
}

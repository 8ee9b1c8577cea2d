import Foundation
import Testing

/// The built `baton` binary's command line: exact output and exit codes.
struct CommandLineTests {
    @Test func versionAndTopLevelHelp() throws {
        let version = try runBaton(["--version"])
        #expect(version.0 == 0 && version.2.isEmpty && version.1.hasPrefix("baton 0.2.0 (commit ") && version.1.hasSuffix(")\n"))
        let (status, out, err) = try runBaton(["--help"])
        #expect(status == 0 && err.isEmpty)
        #expect(out.hasPrefix("OVERVIEW: Baton, an old-for-new token exchange service.\n\nUSAGE: baton <subcommand>\n"))
        #expect(out.contains("SUBCOMMANDS:\n  serve") && out.contains("  admin "))
    }

    @Test func unknownSubcommandIsAUsageError() throws {
        #expect(try runBaton(["frobnicate"]) == (64, "", "Error: Unknown subcommand or option 'frobnicate'.\nUsage: baton <subcommand>\n  See 'baton --help'.\n"))
    }

    @Test func serveHelpDocumentsEveryOption() throws {
        let (status, out, _) = try runBaton(["serve", "--help"])
        #expect(status == 0)
        for option in ["--db <path|uri>", "--key-file <path>", "--db-connections <n>", "--listen <host:port>", "--token-ttl <duration>", "--exchange-window <duration>",
                       "--max-session <duration>", "--retry-grace <duration>", "--max-chains-per-user <n>", "--one-chain-per-device-class",
                       "--trusted-proxy <cidr>", "--max-connections <n>", "--request-timeout <duration>", "--idle-timeout <duration>",
                       "--worker-threads <n>", "--max-concurrent-hashes <n>", "--access-log <on|off>", "BATON_<OPTION>"] {
            #expect(out.contains(option), "\(option)")
        }
        #expect(try runBaton(["help", "serve"]).1 == out)
    }

    @Test(arguments: [
        (["--bogus"], "Error: Unknown option '--bogus'."),
        (["--token-ttl", "5x"], "Error: Invalid value '5x' for '--token-ttl <duration>': expected a duration such as 90s, 15m, 7d."),
        (["--token-ttl", "0"], "Error: Invalid value '0' for '--token-ttl <duration>': must be positive."),
        (["--idle-timeout", "0"], "Error: Invalid value '0' for '--idle-timeout <duration>': must be positive."),
        (["--worker-threads", "0"], "Error: Invalid value '0' for '--worker-threads <n>': must be a positive whole number."),
        (["--event-loops", "0"], "Error: Invalid value '0' for '--event-loops <n>': must be a positive whole number."),
        (["--verify-memory", "-1"], "Error: Invalid value '-1' for '--verify-memory <rows>': expected a whole number of at least 0."),
        (["--verify-memory", "100000000"], "Error: Invalid value '100000000' for '--verify-memory <rows>': must be at most 67108864."),
        (["--max-concurrent-hashes", "2000000000000000000"], "Error: Invalid value '2000000000000000000' for '--max-concurrent-hashes <n>': must be at most 1048576."),
        (["--listen", "localhost"], "Error: Invalid value 'localhost' for '--listen <host:port>': expected an IP address and port, or localhost:<port> for 127.0.0.1:<port> (no other host names), e.g. 127.0.0.1:8080 or [::1]:8080."),
        (["--listen", "example.com:8080"], "Error: Invalid value 'example.com:8080' for '--listen <host:port>': expected an IP address and port, or localhost:<port> for 127.0.0.1:<port> (no other host names), e.g. 127.0.0.1:8080 or [::1]:8080."),
        (["--listen", "ip6-localhost:8080"], "Error: Invalid value 'ip6-localhost:8080' for '--listen <host:port>': expected an IP address and port, or localhost:<port> for 127.0.0.1:<port> (no other host names), e.g. 127.0.0.1:8080 or [::1]:8080."),
        (["--max-chains-per-user", "-1"], "Error: Invalid value '-1' for '--max-chains-per-user <n>': expected a whole number of at least 0."),
        (["--trusted-proxy", "10.0.0.0/99"], "Error: Invalid value '10.0.0.0/99' for '--trusted-proxy <cidr>': expected an address or network, e.g. 10.0.0.0/8."),
        (["--db"], "Error: Missing value for '--db <path|uri>'."),
        (["--access-log", "maybe"], "Error: Invalid value 'maybe' for '--access-log <on|off>': expected on or off."),
    ])
    func badServeOptionsExit64NamingTheProblem(_ arguments: [String], _ message: String) throws {
        let (status, out, err) = try runBaton(["serve"] + arguments)
        #expect(status == 64 && out.isEmpty)
        #expect(err == message + "\nUsage: baton serve [<options>]\n  See 'baton serve --help'.\n")
    }

    /// A host that refuses verify's memory (here a 4 GiB limit on address space, against the
    /// 16 GiB that 67,108,864 rows map) stops the start with a message naming the flag, and
    /// leaves no database behind, rather than serving every verify from the database unsaid.
    @Test func verifyMemoryThatCannotBeMappedStopsTheStartNamingTheFlag() throws {
        let directory = try KeyFileCheckTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, out, err) = try runProgram("/usr/bin/prlimit", [
            "--as=4294967296", productsDirectory.appendingPathComponent("baton").path, "serve",
            "--db", directory + "/baton.db", "--listen", "127.0.0.1:0", "--verify-memory", "67108864",
        ])
        #expect(status == 1 && out.isEmpty, "\(status) \(out)")
        #expect(err.hasPrefix("Error: --verify-memory 67108864: cannot map 16384 MiB for verify's memory (Cannot allocate memory); lower --verify-memory, or 0"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/baton.db"))
    }

    /// The one host name --listen takes, as its message says: localhost is 127.0.0.1.
    @Test func listenOnLocalhostBindsTheIPv4Loopback() throws {
        let directory = try KeyFileCheckTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try KeyFileCheckTests.UmaskServer(["--db", directory + "/baton.db"], directory: directory, listen: "localhost:0")
        let port = try #require(server.stdout.firstRange(of: #""address":"127.0.0.1:"#).map { server.stdout[$0.upperBound...].prefix { $0.isNumber } })
        #expect(try HTTPConnection(port: try #require(UInt16(port))).request("GET", "/readyz", token: nil, headers: [], json: nil).status == 200)
        #expect(server.stop() == 0)
    }

    @Test func environmentSetsOptionsAndFlagsWin() throws {
        // The environment is given to the child only: the test process's own stays untouched.
        let fromEnvironment = try ServerProcess(environment: ["BATON_TOKEN_TTL": "2m"])
        try fromEnvironment.addUser("alice")
        #expect(try fromEnvironment.login()["expires_in"] as? Int == 120)
        let flagWins = try ServerProcess(["--token-ttl", "3m"], environment: ["BATON_TOKEN_TTL": "2m"])
        try flagWins.addUser("alice")
        #expect(try flagWins.login()["expires_in"] as? Int == 180)
        let (status, _, err) = try runBaton(["serve"], environment: ["BATON_TOKEN_TTL": "soon"])
        #expect(status == 64 && err.hasPrefix("Error: Invalid value 'soon' for BATON_TOKEN_TTL: expected a duration"))
    }

    @Test func userAddCreatesOnceAndRefusesWeakPasswords() throws {
        let directory = NSTemporaryDirectory() + "baton-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db"
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", db], stdin: "correct horse\r\n") == (0, "Created user 'alice' (id 1).\n", ""))
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", db], stdin: "another password\n") == (1, "", "Error: User 'alice' already exists.\n"))
        #expect(try runBaton(["admin", "user", "add", "bob", "--password-stdin", "--db", db], stdin: "short\n") == (1, "", "Error: Password must be at least 8 bytes (UTF-8).\n"))
        #expect(try runBaton(["admin", "user", "add", "--password-stdin", "--db", db]).0 == 64)
        let (status, _, err) = try runBaton(["admin", "user", "add", "carol", "--db", db])  // stdin is a pipe, not a terminal
        #expect(status == 64 && err.hasPrefix("Error: Standard input is not a terminal; pass --password-stdin"))
        // The password given with a trailing CRLF works without it.
        let server = try ServerProcess(directory: directory)
        #expect(try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse","device_id":"d"}"#).status == 200)
    }

    /// Issue 30: one event loop per CPU the process may use, not per online CPU: a server
    /// pinned to one CPU (taskset, a container's cpuset) runs one loop; `--event-loops` wins.
    @Test func eventLoopsFollowTheCPUsTheProcessMayUse() throws {
        let directory = NSTemporaryDirectory() + "baton-loops-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Stopped by SIGTERM after 8 s (timeout(1)); it prints its listening line at once.
        let pinned = try runCommand("/usr/bin/timeout", ["8", "/usr/bin/taskset", "-c", "0", batonBinary, "serve",
                                                         "--db", directory + "/baton.db", "--listen", "127.0.0.1:0"])
        #expect(pinned.stdout.contains(#""event_loops":1,"#), "\(pinned.stdout) \(pinned.stderr)")
        let chosen = try runCommand("/usr/bin/timeout", ["8", batonBinary, "serve", "--db", directory + "/baton.db",
                                                         "--listen", "127.0.0.1:0", "--event-loops", "3"])
        #expect(chosen.stdout.contains(#""event_loops":3,"#), "\(chosen.stdout) \(chosen.stderr)")
    }
}

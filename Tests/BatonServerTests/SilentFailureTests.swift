@testable import BatonHTTP
import Foundation
import Glibc
import Testing

/// Issue 11, "Silent failures": each operator step as docs/admin.md describes it, with the
/// exact output and exit code, run on the built binary.
struct SilentFailureTests {
    /// A fresh directory under the test run's TMPDIR.
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "baton-ops-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func missingKeyFileNextToADatabaseWithUsersRefusesToStart() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db", key = db + ".key"
        // user add makes the database and its key together (0600).
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", db], stdin: "correct horse battery\n").0 == 0)
        var info = stat()
        #expect(stat(key, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let server = try ServerProcess(directory: directory)
        let token = try server.login()["token"] as! String
        #expect(server.stop() == 0)
        try FileManager.default.removeItem(atPath: key)

        let (status, out, err) = try runBaton(["serve", "--db", db, "--listen", "127.0.0.1:0"])
        #expect(status == 1 && out.isEmpty)
        #expect(err == """
            Error: key file \(key) is missing, but database \(db) has users or chains: a new key would make every \
            issued token invalid. Restore the key file from the backup taken with the database (docs/admin.md, \
            "The key file"). If the key is lost for good, start once with --new-key: every user must log in again.

            """)
        #expect(access(key, F_OK) != 0)  // no key was made

        // --new-key is the explicit way through; the old token is then invalid.
        let renewed = try ServerProcess(["--new-key"], directory: directory)
        #expect(renewed.stdout.contains(#""key_created":true"#))
        #expect(try renewed.request("GET", "/v1/verify", token: token).error == "token_invalid")
    }

    @Test func aNewDatabaseGetsAKeyOnFirstStart() throws {
        let server = try ServerProcess()
        #expect(server.stdout.contains(#""key_created":true"#))
        #expect(access(server.databasePath + ".key", F_OK) == 0)
    }

    @Test func busyPortFailsNamingTheAddressBeforeCreatingAnyFile() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let holder = try Listener(address: ListenAddress("127.0.0.1:0")!)
        defer { holder.close() }
        let address = holder.address.description
        let (status, out, err) = try runBaton(["serve", "--db", directory + "/baton.db", "--listen", address])
        #expect(status == 1 && out.isEmpty)
        #expect(err == "Error: cannot listen on \(address): Address already in use (another process holds this port; stop it or choose another address with --listen)\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)  // no database, WAL or key
    }

    @Test func sqliteErrorsNameTheFileAndTheCause() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let other = directory + "/notes.db"
        #expect(FileManager.default.createFile(atPath: other, contents: Data(String(repeating: "not a database ", count: 100).utf8)))
        let expected = "Error: database \(other) is not a SQLite database (another file, or damaged) (SQLITE_NOTADB)\n"
        #expect(try runBaton(["admin", "user", "list", "--db", other]) == (1, "", expected))
        #expect(try runBaton(["admin", "user", "disable", "bob", "--db", other]) == (1, "", expected))
        let (status, _, err) = try runBaton(["serve", "--db", other, "--listen", "127.0.0.1:0", "--new-key"])
        #expect(status == 1 && err == expected)
    }

    /// A 0444 backup copy in a read-only directory, read by an unprivileged user (root ignores
    /// file modes, so as root the commands run as `nobody` through setpriv).
    @Test func readOnlyCommandsWorkOnAReadOnlyCopy() throws {
        let source = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: source) }
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", source + "/baton.db"], stdin: "correct horse battery\n").0 == 0)
        // Outside TMPDIR (mode 0700 as made by mktemp): nobody must be able to reach it.
        let copy = "/tmp/baton-readonly-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
        defer {
            chmod(copy, 0o755)
            try? FileManager.default.removeItem(atPath: copy)
        }
        let binary = copy + "/baton"
        try FileManager.default.copyItem(atPath: batonBinary, toPath: binary)
        try FileManager.default.copyItem(atPath: source + "/baton.db", toPath: copy + "/backup.db")
        chmod(copy + "/backup.db", 0o444)
        chmod(copy, 0o555)
        let asUser = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary] : [binary]
        func run(_ arguments: [String]) throws -> (Int32, String, String) {
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: asUser[0])
            process.arguments = Array(asUser.dropFirst()) + arguments + ["--db", copy + "/backup.db"]
            process.currentDirectoryURL = URL(fileURLWithPath: "/")
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let output = out.fileHandleForReading.readDataToEndOfFile(), error = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: error, as: UTF8.self))
        }
        for command in [["admin", "user", "list"], ["admin", "chains", "--all"], ["admin", "audit"], ["admin", "stats"]] {
            let (status, _, err) = try run(command)
            #expect(status == 0 && err.isEmpty, "\(command): \(err)")
        }
        #expect(try run(["admin", "user", "list"]).1.hasPrefix("NAME   ID  CREATED"))
        // A write says read-only, naming the file.
        let (status, _, err) = try run(["admin", "user", "disable", "alice"])
        #expect(status == 1 && err.hasPrefix("Error: database \(copy)/backup.db is read-only") && err.hasSuffix("(SQLITE_READONLY)\n"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: copy).sorted() == ["backup.db", "baton"])
    }

    @Test func environmentErrorsNameTheVariableAndUnknownOnesWarn() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try runBaton(["serve", "--db", directory + "/baton.db"], environment: ["BATON_TOKEN_TTL": "abc"]) == (64, "", """
            Error: Invalid value 'abc' for BATON_TOKEN_TTL: expected a duration such as 90s, 15m, 7d.
            Usage: baton serve [<options>]
              See 'baton serve --help'.

            """))
        #expect(try runBaton(["serve"], environment: ["BATON_TOKEN_TTL": "0"]).2.hasPrefix("Error: Invalid value '0' for BATON_TOKEN_TTL: must be positive.\n"))
        let warning = "Warning: ignoring the environment variable BATON_TOKN_TTL: no option reads it (see 'baton serve --help').\n"
        #expect(try runBaton(["admin", "user", "list", "--db", directory + "/none.db"], environment: ["BATON_TOKN_TTL": "5m"]).2.hasPrefix(warning))
        let server = try ServerProcess(["--public-url", "http://127.0.0.1"], environment: ["BATON_TOKN_TTL": "5m"])
        #expect(server.stderr == warning)
    }

    @Test func sighupIsLoggedAndIgnoredAndSigtermStillStops() throws {
        let server = try ServerProcess()
        server.process.send(SIGHUP)
        #expect(eventually { server.stdout.contains(#""event":"signal_ignored""#) })
        #expect(try server.request("GET", "/healthz").status == 200)
        #expect(server.stop(SIGTERM) == 0)
        #expect(server.stdout.contains(#""event":"stopped","signal":15"#) || server.stdout.contains(#""signal":15"#))
        #expect(server.stdout.contains(#""event":"stopped""#))
    }
}

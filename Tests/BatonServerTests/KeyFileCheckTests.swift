import BatonTestSupport
import Foundation
import Glibc
import Testing

/// Issue 22 (1-3) and issue 17 (finding 8): the key file belongs to one database, a refused
/// start leaves nothing behind, and what Baton creates is owner-only whatever the umask. Run
/// on the built binary, with the exact messages and exit codes an operator sees.
struct KeyFileCheckTests {
    /// A fresh directory under the test run's TMPDIR.
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "baton-keycheck-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A key file with `hex` (64 hex digits) and a newline, mode 0600.
    static func writeKey(_ hex: String, to path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data((hex + "\n").utf8), attributes: [.posixPermissions: 0o600]))
    }

    /// 64 random hex digits, as `openssl rand -hex 32` writes them.
    static func randomHex() throws -> String {
        try runProcess("/usr/bin/openssl", ["rand", "-hex", "32"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The first 16 hex digits of the key's fingerprint, computed by openssl (not by Baton):
    /// HMAC-SHA-256 of the label "baton key fingerprint v1" under the key.
    static func fingerprint(ofKeyFile path: String) throws -> String {
        let hex = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let script = "printf %s 'baton key fingerprint v1' | /usr/bin/openssl dgst -sha256 -mac HMAC -macopt hexkey:\(hex)"
        let out = try runProcess("/bin/sh", ["-c", script]).out
        return String(out.split(separator: " ").last!.prefix(16))
    }

    static func listing(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    /// `baton serve` expected to refuse: run under timeout(1), so a server that starts after
    /// all (the bug) is stopped after 10 s and the test fails instead of hanging.
    static func serve(_ arguments: [String]) throws -> (Int32, String, String) {
        let result = try runProcess("/usr/bin/timeout", ["-k", "5", "10", batonBinary, "serve", "--listen", "127.0.0.1:0"] + arguments, check: false)
        return (result.status, result.out, result.err)
    }

    @Test func anotherWellFormedKeyOnTheSameDatabaseIsRefusedNamingBothFiles() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db", key = db + ".key", other = directory + "/other.key"
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", db], stdin: "correct horse battery\n").0 == 0)
        let first = try ServerProcess(directory: directory)
        let token = try #require(try first.login()["token"] as? String)
        #expect(first.stop() == 0)
        Self.writeKey(try Self.randomHex(), to: other)
        let recorded = try Self.fingerprint(ofKeyFile: key), presented = try Self.fingerprint(ofKeyFile: other)

        let before = try Self.listing(directory)
        let (status, out, err) = try KeyFileCheckTests.serve(["--db", db, "--key-file", other])
        #expect(status == 1 && out.isEmpty)
        #expect(err == """
            Error: key file \(other) does not match database \(db): the database was used with another key \
            (fingerprint \(recorded); this file's is \(presented)), and every token it issued would be invalid. \
            Start with the database's own key file (restore it from the backup taken with the database; docs/admin.md, \
            "The key file"). If that key is lost for good, start once with --new-key to make \(other) the database's \
            key: every user must log in again.

            """)
        #expect(try Self.listing(directory) == before)  // no -wal, no -shm

        // --new-key adopts the other file, audited; the old token is then invalid, and the
        // database's first key is the one refused now.
        let renewed = try ServerProcess(["--key-file", other, "--new-key"], directory: directory)
        #expect(renewed.stdout.contains(#""key_created":false"#) && renewed.stdout.contains(#""key_fingerprint":"\#(presented)""#))
        #expect(try renewed.request("GET", "/v1/verify", token: token).error == "token_invalid")
        #expect(renewed.stop() == 0)
        let audit = try runBaton(["admin", "audit", "--kind", "key_replaced", "--format", "json", "--db", db])
        #expect(audit.0 == 0 && audit.1.contains(#""previous":"\#(recorded)"#) && audit.1.contains(#""fingerprint":"\#(presented)"#)
                && audit.1.contains(#""key_file":"\#(other)""#))
        let back = try KeyFileCheckTests.serve(["--db", db])
        #expect(back.0 == 1 && back.2.hasPrefix("Error: key file \(key) does not match database \(db): "))
    }

    @Test func aRefusedStartLeavesTheDirectoryAsItFoundIt() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db"
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", db], stdin: "correct horse battery\n").0 == 0)
        try FileManager.default.removeItem(atPath: db + ".key")
        let before = try Self.listing(directory)
        #expect(before == ["baton.db"])
        let (status, _, err) = try KeyFileCheckTests.serve(["--db", db])
        #expect(status == 1 && err.hasPrefix("Error: key file \(db).key is missing, but database \(db) has users or chains"))
        #expect(try Self.listing(directory) == before)
    }

    /// Issue 32 (3): a start refused for a setting checked after the database was opened (a
    /// webhook secret file group or others can read) left a database without its key behind,
    /// and the next start, with the setting fixed, refused to run on a brand-new install
    /// ("restore the key file"). Every setting is checked before anything is created.
    @Test func aStartRefusedForAnUnsafeWebhookSecretCreatesNothingAndTheNextStartRuns() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db", secret = directory + "/hooks.secret"
        #expect(FileManager.default.createFile(atPath: secret, contents: Data("whsec_\(Data(repeating: 7, count: 32).base64EncodedString())\n".utf8),
                                               attributes: [.posixPermissions: 0o644]))
        let webhook = ["--webhook", "http://127.0.0.1:9/hook", "--webhook-secret-file", secret]
        let (status, out, err) = try KeyFileCheckTests.serve(["--db", db] + webhook)
        #expect(status == 1 && out.isEmpty)
        #expect(err == "Error: webhook secret file \(secret) can be read by group or others; chmod 600 it\n")
        #expect(try Self.listing(directory) == ["hooks.secret"])
        #expect(chmod(secret, 0o600) == 0)
        let server = try ServerProcess(webhook, directory: directory)
        #expect(server.stdout.contains(#""key_created":true"#), "\(server.stderr)")
        #expect(server.stop() == 0)
    }

    /// The same for the DPoP nonce key file, read after the store before; once owner-only, it starts.
    @Test func aStartRefusedForAnUnsafeNonceKeyFileCreatesNothing() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let nonceKey = directory + "/nonce.key"
        #expect(FileManager.default.createFile(atPath: nonceKey, contents: Data((try Self.randomHex() + "\n").utf8), attributes: [.posixPermissions: 0o644]))
        let (status, out, err) = try KeyFileCheckTests.serve(["--db", directory + "/baton.db", "--dpop-nonce-key-file", nonceKey])
        #expect(status == 1 && out.isEmpty && err.hasPrefix("Error: ") && err.contains(nonceKey), "\(err)")
        #expect(try Self.listing(directory) == ["nonce.key"])
        #expect(chmod(nonceKey, 0o600) == 0)
        let server = try ServerProcess(["--dpop-nonce-key-file", nonceKey, "--dpop-nonce", "always"], directory: directory)
        #expect(server.stdout.contains(#""key_created":true"#), "\(server.stderr)")
        #expect(server.stop() == 0)
    }

    @Test func aMissingDatabaseDirectoryIsNamedWithWhatToDo() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = directory + "/data"
        let expected = "Error: directory \(missing) (of database \(missing)/baton.db) does not exist: create it first (mkdir -p \(missing)), or check --db / BATON_DB\n"
        #expect(try KeyFileCheckTests.serve(["--db", missing + "/baton.db"]) == (1, "", expected))
        #expect(try runBaton(["admin", "user", "add", "alice", "--password-stdin", "--db", missing + "/baton.db"], stdin: "correct horse battery\n")
                == (1, "", expected))
        // The key file's own directory, when --key-file puts it elsewhere.
        let (status, out, err) = try KeyFileCheckTests.serve(["--db", directory + "/baton.db", "--key-file", missing + "/baton.key"])
        #expect(status == 1 && out.isEmpty)
        #expect(err == "Error: directory \(missing) (of key file \(missing)/baton.key) does not exist: create it first (mkdir -p \(missing)), or check --key-file / BATON_KEY_FILE\n")
        #expect(try Self.listing(directory).isEmpty)
    }

    /// `baton serve` under `/bin/sh -c 'umask 022; exec baton serve …'`, until its listening line.
    final class UmaskServer {
        let process = ChildProcess()
        let stdoutPath: String
        var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

        init(_ arguments: [String], directory: String, listen: String = "127.0.0.1:0") throws {
            stdoutPath = directory + "/stdout-" + UUID().uuidString + ".log"
            #expect(FileManager.default.createFile(atPath: stdoutPath, contents: nil))
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", #"umask 022 && exec "$0" "$@""#, batonBinary, "serve", "--listen", listen] + arguments
            process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, process.isRunning, !((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "").contains("listening") {
                usleep(5_000)  // polling a file for a condition, with a deadline
            }
        }

        func stop() -> Int32 {
            if process.isRunning {
                process.send(SIGTERM)
                process.waitUntilExit()
            }
            return process.terminationStatus
        }

        deinit {
            if process.processIdentifier != 0, process.isRunning {
                process.send(SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    @Test func theDatabaseItsWALAndTheKeyAreOwnerOnlyUnderUmask022() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func mode(_ path: String) -> mode_t? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
        }
        // user add creates a database and key; serve creates another; both under umask 022.
        let added = directory + "/added.db", served = directory + "/served.db"
        let add = #"umask 022 && printf 'correct horse battery\n' | "$0" admin user add alice --password-stdin --db "$1""#
        #expect(try runProcess("/bin/sh", ["-c", add, batonBinary, added]).status == 0)
        for db in [added, served] {
            let server = try UmaskServer(["--db", db], directory: directory)
            let modes = ["", "-wal", "-shm", ".key"].map { "\($0): \(mode(db + $0).map { String($0, radix: 8) } ?? "missing")" }
            #expect(modes == [": 600", "-wal: 600", "-shm: 600", ".key: 600"], "\(db)")
            #expect(server.stop() == 0)
        }
    }

    @Test(arguments: [
        String(repeating: "0", count: 64),
        String(repeating: "f", count: 64),
        String(repeating: "ab", count: 32),
        String(repeating: "0123456789abcdef", count: 4),
        String(repeating: "00", count: 31) + "01",
    ])
    func aConstantOrPatternedKeyFileIsRefusedLikeAShortOne(hex: String) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = directory + "/weak.key"
        Self.writeKey(hex, to: key)
        let (status, out, err) = try KeyFileCheckTests.serve(["--db", directory + "/baton.db", "--key-file", key])
        #expect(status == 1 && out.isEmpty)
        let distinct = Set(stride(from: 0, to: 64, by: 2).map { hex.dropFirst($0).prefix(2) }).count
        #expect(err == """
            Error: key file \(key) is not random (its 32 bytes take only \(distinct) distinct value\(distinct == 1 ? "" : "s"), \
            fewer than 16): write a random key, e.g. openssl rand -hex 32 > \(key) (tokens signed with the old key stop working)

            """)
        #expect(try Self.listing(directory) == ["weak.key"])
    }
}

/// Issue 22 (1) on PostgreSQL: every instance must read the same key, and the database says
/// which one.
@Suite(.serialized)
struct PostgresKeyFileCheckTests {
    @Test func anInstanceWithAnotherKeyIsRefusedNamingTheKeyFileAndTheDatabase() async throws {
        let first = try await ServerProcess.start(on: .postgresql)
        try await offPool {
            defer {  // now, not when the last reference goes (the runner may exit first)
                first.stop()
                try? FileManager.default.removeItem(atPath: first.directory)
            }
            try first.addUser("alice")
            let token = try #require(try first.login()["token"] as? String)
            let key = first.directory + "/baton.key", other = first.directory + "/other.key"
            KeyFileCheckTests.writeKey(try KeyFileCheckTests.randomHex(), to: other)
            let recorded = try KeyFileCheckTests.fingerprint(ofKeyFile: key), presented = try KeyFileCheckTests.fingerprint(ofKeyFile: other)
            let uri = first.databasePath
            let (status, out, err) = try KeyFileCheckTests.serve(["--db", uri, "--key-file", other, "--unsafe-postgres-durability"])  // the tests' cluster: fsync off
            #expect(status == 1 && out.isEmpty)
            #expect(err == """
                Error: key file \(other) does not match database \(uri): the database was used with another key \
                (fingerprint \(recorded); this file's is \(presented)), and every token it issued would be invalid. \
                Start with the database's own key file (copy it from another instance; docs/admin.md, \
                "The key file"). If that key is lost for good, start once with --new-key to make \(other) the database's \
                key: every user must log in again.

                """)
            // The first key still works on a second instance; --new-key moves the database to the other.
            let second = try ServerProcess(["--key-file", key], database: uri)
            #expect(try second.request("GET", "/v1/verify", token: token).status == 200)
            #expect(second.stop() == 0)
            let renewed = try ServerProcess(["--key-file", other, "--new-key"], database: uri)
            #expect(renewed.stdout.contains(#""key_fingerprint":"\#(presented)""#))
            #expect(try renewed.request("GET", "/v1/verify", token: token).error == "token_invalid")
            #expect(renewed.stop() == 0)
            let audit = try runBaton(["admin", "audit", "--kind", "key_replaced", "--format", "json", "--db", uri])
            #expect(audit.0 == 0 && audit.1.contains(#""previous":"\#(recorded)"#) && audit.1.contains(#""fingerprint":"\#(presented)"#))
        }
    }

    @Test func migrateCarriesTheFingerprintSoAnotherKeyIsRefusedOnPostgres() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        try await offPool {
            let sqlite = try ServerProcess()
            try sqlite.addUser("alice")
            #expect(sqlite.stop() == 0)
            let migrated = try runBaton(["admin", "migrate", "--db", sqlite.databasePath, "--to", uri])
            #expect(migrated.0 == 0, "\(migrated.2)")
            let other = sqlite.directory + "/other.key"
            KeyFileCheckTests.writeKey(try KeyFileCheckTests.randomHex(), to: other)
            let (status, _, err) = try KeyFileCheckTests.serve(["--db", uri, "--key-file", other, "--unsafe-postgres-durability"])
            #expect(status == 1 && err.hasPrefix("Error: key file \(other) does not match database \(uri): "))
            let same = try ServerProcess(["--key-file", sqlite.databasePath + ".key"], database: uri)
            #expect(same.stop() == 0)
        }
    }
}

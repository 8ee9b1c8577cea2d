import Foundation
import Glibc
import Testing

/// A version-1 database (Tests/Fixtures/schema-v1.sql) under the admin CLI's read-only
/// commands: migrated in place when the file can be written, a clear refusal when not.
struct SchemaUpgradeCommandTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/schema-v1.sql").path

    /// A version-1 file with one user, made with the sqlite3 shell from the fixture.
    func makeVersion1Database(at path: String) throws {
        try runProcess(SQLiteShell.binary ?? "/usr/bin/sqlite3", [path, ".read \(Self.fixture)",
            "INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES ('alice', 'x', 0, 0)"])
        #expect(try userVersion(path) == "1")
    }

    func userVersion(_ path: String) throws -> String {
        try runProcess(SQLiteShell.binary ?? "/usr/bin/sqlite3", [path, "PRAGMA user_version"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func statsMigratesAVersion1DatabaseItCanWrite() throws {
        let directory = try temporaryDirectory("v1-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db"
        try makeVersion1Database(at: db)
        let (status, out, err) = try runBaton(["admin", "stats", "--db", db])
        #expect(status == 0 && err.isEmpty && out.contains("users"), "\(out)\(err)")
        #expect(try userVersion(db) == "12")
        #expect(try runBaton(["admin", "user", "list", "--db", db]).1.contains("alice"))
    }

    @Test func aReadOnlyVersion1CopyIsRefusedNamingTheFileAndTheWayToMigrate() throws {
        let directory = try temporaryDirectory("v1-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/backup.db"
        try makeVersion1Database(at: db)
        chmod(db, 0o444)
        let expected = """
            Error: database \(db) has schema version 1 (an earlier baton's) and cannot be migrated here: \
            the file or its directory is not writable. Copy it somewhere writable and run any \
            `baton admin` command on the copy, or `baton serve` on it: either migrates it to version 12 in place.

            """
        for command in [["stats"], ["user", "list"], ["chains", "--all"], ["audit"], ["prune", "--dry-run"]] {
            #expect(try runBaton(["admin"] + command + ["--db", db]) == (1, "", expected), "\(command)")
        }
        #expect(try userVersion(db) == "1")  // left as it was
    }

    @Test func anUnknownVersionIsRefusedWithoutCallingVersion1Unsupported() throws {
        let directory = try temporaryDirectory("v99-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = directory + "/baton.db"
        try makeVersion1Database(at: db)
        try runProcess(SQLiteShell.binary ?? "/usr/bin/sqlite3", [db, "PRAGMA user_version = 99"])
        let expected = "Error: database schema version 99 is unknown to this baton (it uses version 12 and migrates versions 1 to 11 in place; "
            + "a newer baton may have written this file)\n"
        #expect(try runBaton(["admin", "stats", "--db", db]) == (1, "", expected))
        #expect(try runBaton(["admin", "user", "disable", "alice", "--db", db]) == (1, "", expected))
        #expect(try userVersion(db) == "99")
    }
}

import BatonCore
import BatonStorage
@testable import BatonStore
import CSQLite
import Foundation
import Testing

/// SQLite only: the schema file, STRICT tables, foreign keys and the file-version checks are
/// the SQLite store's own (PostgreSQL's schema is checked in BatonServerTests' PostgreSQL suites).
struct SchemaTests {
    static let schemaFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("schema.sql")

    static func master(_ connection: Connection) throws -> [String] {
        try connection.statement("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all {
            "\($0.text(0))|\($0.text(1))|\($0.text(2))|\($0.optionalText(3) ?? "")"
        }
    }

    /// Opens the older database at `path` with this build, which migrates it at open; checks
    /// that it then has the current version and exactly the schema of the fresh file at
    /// `freshPath`; returns a connection to it for the test's own checks (the caller closes it).
    static func migratedAtOpen(_ path: String, comparedWith freshPath: String) throws -> Connection {
        try TokenStore(path: path, key: nil, options: { var o = TokenStore.Options(); o.create = false; return o }()).close()
        let migrated = try Connection(path: path)
        do {
            let fresh = try Connection(path: freshPath)
            defer { fresh.close() }
            #expect(try migrated.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
            #expect(try master(migrated) == master(fresh))
        } catch {
            migrated.close()
            throw error
        }
        return migrated
    }

    @Test func embeddedSchemaIsExactlyTheTopLevelFile() throws {
        #expect(Schema.sql == (try String(contentsOf: Self.schemaFile, encoding: .utf8)))
    }

    @Test func freshDatabaseMatchesSchemaSQL() throws {
        let db = try TemporaryDatabase()
        let reference = try Connection(path: db.directory + "/reference.db")
        defer { reference.close() }
        try reference.execute(try String(contentsOf: Self.schemaFile, encoding: .utf8))
        let created = try Connection(path: db.path)
        defer { created.close() }
        #expect(try Self.master(created) == Self.master(reference))
        #expect(try Self.master(created).count == 26)  // 14 tables (sqlite_sequence too), 6 autoindexes + 6 indexes
        #expect(try created.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
        #expect(try created.statement("PRAGMA journal_mode").first { $0.text(0) } == "wal")
        #expect(try created.pageSize() == 2048)  // SQLite's own default is 4096
        #expect(try reference.pageSize() == 2048)
        #expect(try Self.walSizeLimit(db.store) == Int64(TokenStore.Options().checkpoints.restartAt * 2048))
    }

    /// The writer's `journal_size_limit`, in bytes (a setting of its connection, not the file's).
    static func walSizeLimit(_ store: TokenStore) throws -> Int64? {
        try store.writer.write { connection throws(SQLiteError) in
            try connection.statement("PRAGMA journal_size_limit").first { $0.int(0) }
        }
    }

    /// A database made with SQLite's default 4096-byte pages (by an earlier build) keeps them:
    /// it opens and serves, and its WAL's size limit counts its own pages.
    @Test func aDatabaseMadeWithLargerPagesKeepsThem() throws {
        let directory = try TestDirectories.make()
        defer { TestDirectories.remove(directory) }
        let path = directory + "/baton.db"
        var handle: OpaquePointer?
        #expect(sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK)
        #expect(sqlite3_exec(handle, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (a); DROP TABLE t", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(handle)

        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
        let store = try TokenStore(path: path, key: key)
        try store.createUser("alice", password: "correct horse battery")
        let login = try store.login(LoginRequest(username: "alice", password: "correct horse battery", deviceID: "phone-1", deviceClass: .mobile),
                                    context: RequestContext(ip: "192.0.2.10", userAgent: "TestApp/1.0"))
        let successor = try store.exchange(login.token)
        #expect(throws: Never.self) { try store.verify(successor.token) }
        #expect(try Self.walSizeLimit(store) == Int64(TokenStore.Options().checkpoints.restartAt * 4096))
        store.close()

        let connection = try Connection(path: path)
        defer { connection.close() }
        #expect(try connection.pageSize() == 4096)
        #expect(try connection.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
    }

    @Test func tablesAreStrictAndForeignKeysAreOn() throws {
        let db = try TemporaryDatabase()
        let connection = try Connection(path: db.path)
        defer { connection.close() }
        #expect(throws: SQLiteError.self) {
            try connection.execute("INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES ('x', 'h', 'not a number', 1)")
        }
        #expect(throws: SQLiteError.self) {
            try connection.execute("INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time) VALUES (1, 999, 'd', 'mobile', 1, 0, zeroblob(32), 1, 1, 1)")
        }
    }

    @Test func databaseOfAnUnknownVersionIsRefused() throws {
        let db = try TemporaryDatabase()
        db.store.close()
        let connection = try Connection(path: db.path)
        try connection.execute("PRAGMA user_version = 99")
        connection.close()
        #expect(throws: StoreError.unknownSchemaVersion(found: 99, supported: Schema.version)) {
            _ = try TokenStore(path: db.path, key: nil)
        }
    }

    @Test func foreignDatabaseAndMissingFileAreRefused() throws {
        let db = try TemporaryDatabase()
        let other = db.directory + "/other.db"
        let connection = try Connection(path: other)
        try connection.execute("CREATE TABLE notes (body TEXT)")
        connection.close()
        #expect(throws: StoreError.notABatonDatabase(other)) { _ = try TokenStore(path: other, key: nil) }
        var options = TokenStore.Options()
        options.create = false
        let missing = db.directory + "/missing.db"
        #expect(throws: StoreError.databaseMissing(missing)) { _ = try TokenStore(path: missing, key: nil, options: options) }
    }
}

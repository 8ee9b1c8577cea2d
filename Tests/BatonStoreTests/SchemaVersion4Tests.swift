@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 3 to 4 (the revocation reason `signed_out`), on both stores: a database made with
/// version 3's schema file (Tests/Fixtures) is migrated at open, keeps its rows, and then
/// accepts the new reason, which version 3's CHECK refused.
@Suite(.serialized)
struct SchemaVersion4Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static let chainRow = """
        INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time)
        VALUES (7, 1, 'phone-1', 'mobile', 1, 0, %@, 1, 2, 1)
        """

    @Test func sqliteVersion3IsMigratedAndAcceptsSignedOut() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v3.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v3.sql"), encoding: .utf8))
            try connection.execute("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1)")
            try connection.execute(Self.chainRow.replacingOccurrences(of: "%@", with: "zeroblob(32)"))
            #expect(throws: SQLiteError.self) { try connection.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'signed_out'") }
        }
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement("SELECT id, device_id FROM chains").all { "\($0.int(0))|\($0.text(1))" } == ["7|phone-1"])
        try migrated.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'signed_out'")
        #expect(throws: SQLiteError.self) { try migrated.execute("UPDATE chains SET revoked_reason = 'party'") }
    }

    @Test func postgresVersion3IsMigratedAndAcceptsSignedOut() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v3.sql"), encoding: .utf8))
        try connection.execute("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1)")
        try connection.execute(Self.chainRow.replacingOccurrences(of: "%@", with: "decode(repeat('00', 32), 'hex')"))
        #expect(throws: PostgresError.self) { try connection.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'signed_out'") }
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        try connection.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'signed_out'")
        #expect(try connection.query("SELECT id, device_id, revoked_reason FROM chains") == [["7", "phone-1", "signed_out"]])
        #expect(throws: PostgresError.self) { try connection.execute("UPDATE chains SET revoked_reason = 'party'") }
    }
}

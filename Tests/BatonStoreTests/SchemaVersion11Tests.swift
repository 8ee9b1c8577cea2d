@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 10 to 11 (`identity_issuers`, `identity_links`: login through an identity
/// provider), on both stores: a database made with version 10's schema file (Tests/Fixtures)
/// is migrated at open, keeps its rows, gets the new tables exactly as a new database has them,
/// and they work (an issuer and a link written and read back).
@Suite(.serialized)
struct SchemaVersion11Tests {
    static let fixtures = SchemaVersion4Tests.fixtures

    @Test func sqliteVersion10GetsTheIdentityTables() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v10.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v10.sql"), encoding: .utf8))
            try connection.execute(SchemaVersion10Tests.rows(flag: "sqlite"))
        }
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement("SELECT count(*) FROM chains").first { $0.int(0) } == 2)
        try migrated.execute("""
            INSERT INTO identity_issuers (name, issuer, settings, created_at) VALUES ('bank', 'https://login.bank.test', '{}', 1);
            INSERT INTO identity_links (issuer, subject, user_id, created_at) VALUES ('https://login.bank.test', 'customer-1', 1, 2);
            """)
        #expect(try migrated.statement("SELECT u.username FROM identity_links l JOIN users u ON u.id = l.user_id").first { $0.text(0) } == "alice")
    }

    @Test func postgresVersion10GetsTheIdentityTables() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v10.sql"), encoding: .utf8))
        try connection.execute(SchemaVersion10Tests.rows(flag: "postgresql"))
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query("SELECT count(*) FROM chains") == [["2"]])
        // The tables and index as a new database has them.
        let shape = """
            SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
            WHERE table_name IN ('identity_issuers', 'identity_links') ORDER BY table_name, ordinal_position
            """
        let indexes = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('identity_issuers', 'identity_links') ORDER BY indexname"
        let freshURI = try await SharedPostgres.shared.newDatabaseURI()
        try PostgresStore(uri: freshURI, key: nil).close()
        let fresh = try PostgresConnection(uri: freshURI, statementTimeout: .seconds(10))
        defer { fresh.close() }
        #expect(try connection.query(shape) == fresh.query(shape))
        #expect(try connection.query(indexes) == fresh.query(indexes))
        #expect(try connection.query(shape).count == 8)
    }
}

@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 11 to 12 (no index `audit_by_user`: no query read it, and every exchange wrote an
/// entry in it), on both stores: a database made with version 11's schema file
/// (Tests/Fixtures) is migrated at open, keeps its rows and its audit, and has exactly the
/// indexes a new database has, the user's index gone and the chain's kept.
@Suite(.serialized)
struct SchemaVersion12Tests {
    static let fixtures = SchemaVersion4Tests.fixtures

    /// Two events of chain 7 (alice's), one of no chain.
    static let audit = """
        INSERT INTO audit (at, kind, user_id, username, chain_id, generation) VALUES
          (5, 'exchanged', 1, 'alice', 7, 1), (6, 'reuse_detected', 1, 'alice', 7, 1), (7, 'user_created', 1, 'alice', NULL, NULL);
        """

    @Test func sqliteVersion11LosesTheUserIndexAndKeepsItsAudit() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v11.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v11.sql"), encoding: .utf8))
            try connection.execute(SchemaVersion10Tests.rows(flag: "sqlite") + Self.audit)
            #expect(try Self.auditIndexes(connection) == ["audit_by_chain", "audit_by_user"])
        }
        // sqlite_master as a new database's.
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try Self.auditIndexes(migrated) == ["audit_by_chain"])
        #expect(try migrated.statement("SELECT count(*) FROM audit WHERE chain_id = 7").first { $0.int(0) } == 2)
        #expect(try migrated.statement("SELECT count(*) FROM audit").first { $0.int(0) } == 3)
        #expect(try migrated.statement("SELECT count(*) FROM chains").first { $0.int(0) } == 2)
    }

    /// An index an operator added to a version-8-or-later audit table is not Baton's to drop.
    @Test func sqliteMigrationKeepsAnOperatorsOwnIndex() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v11.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v11.sql"), encoding: .utf8))
            try connection.execute("CREATE INDEX operators_audit_by_ip ON audit(ip)")
        }
        try TokenStore(path: path, key: nil, options: { var o = TokenStore.Options(); o.create = false; return o }()).close()
        let migrated = try Connection(path: path)
        defer { migrated.close() }
        #expect(try Self.auditIndexes(migrated) == ["audit_by_chain", "operators_audit_by_ip"])
    }

    @Test func postgresVersion11LosesTheUserIndexAndKeepsItsAudit() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v11.sql"), encoding: .utf8))
        try connection.execute(SchemaVersion10Tests.rows(flag: "postgresql") + Self.audit)
        let indexes = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname"
        #expect(try connection.query(indexes).contains { $0.first == "audit_by_user" })
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query("SELECT count(*) FROM audit WHERE chain_id = 7") == [["2"]])
        // Every index as a new database has it.
        let freshURI = try await SharedPostgres.shared.newDatabaseURI()
        try PostgresStore(uri: freshURI, key: nil).close()
        let fresh = try PostgresConnection(uri: freshURI, statementTimeout: .seconds(10))
        defer { fresh.close() }
        #expect(try connection.query(indexes) == fresh.query(indexes))
        #expect(try !connection.query(indexes).contains { $0.first == "audit_by_user" })
        #expect(try connection.query(indexes).contains { $0.first == "audit_by_chain" })
    }

    /// The names of the audit table's indexes (SQLite's own aside), sorted.
    static func auditIndexes(_ connection: Connection) throws -> [String] {
        try connection.statement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit' AND sql IS NOT NULL ORDER BY name")
            .all { $0.text(0) }
    }
}

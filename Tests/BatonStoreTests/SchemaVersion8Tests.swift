@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 7 to 8 (the token key ring), on both stores: a database made with version 7's schema
/// file (Tests/Fixtures) with a DPoP-bound chain and an endpoint that delivered everything is
/// migrated at open. The chain keeps its binding and its head is key 0's (the key file's); the
/// new reason and kinds are accepted; nothing delivered under version 7 is queued again.
@Suite(.serialized)
struct SchemaVersion8Tests {
    static let fixtures = SchemaVersion4Tests.fixtures
    static let jkt = String(repeating: "k", count: 43)

    static func rows(flag: String) -> String {
        """
        INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1);
        INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at,
                            head_expires_at, head_presented, auth_time, jkt)
          VALUES (7, 1, 'phone-1', 'mobile', 1, 3, \(flag == "sqlite" ? "zeroblob(32)" : "decode(repeat('00', 32), 'hex')"), 1, 2,
                  \(flag == "sqlite" ? "0" : "false"), 1, '\(jkt)');
        INSERT INTO audit (id, at, kind, user_id, chain_id, detail) VALUES (1, 1, 'login_succeeded', 1, 7, '{}');
        INSERT INTO webhook_outbox (id, message_id, type, at, body) VALUES (1, 'msg_1', 'user.disabled', 1, '{}');
        INSERT INTO webhook_endpoints (url, cursor, event_types) VALUES ('https://a.example/hook', 0, 'user.disabled');
        """
    }

    static let chain = "SELECT id, head_generation, jkt, head_key, revoked_reason FROM chains"
    static let newRows = """
        INSERT INTO audit (id, at, kind, detail) VALUES (2, 2, 'key_rotated', '{}');
        INSERT INTO audit (id, at, kind, detail) VALUES (3, 3, 'key_retired', '{}');
        UPDATE chains SET revoked_at = 3, revoked_reason = 'key_retired';
        """

    @Test func sqliteVersion7GetsTheKeyRingAndKeepsItsChains() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v7.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v7.sql"), encoding: .utf8))
            try connection.execute(Self.rows(flag: "sqlite"))
        }
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement(Self.chain).all { row in (0..<5).map { row.optionalText($0) ?? "-" } } == [["7", "3", Self.jkt, "0", "-"]])
        #expect(try migrated.statement("SELECT count(*) FROM webhook_deliveries").first { $0.int(0) } == 0)
        #expect(try migrated.statement("SELECT count(*) FROM audit").first { $0.int(0) } == 1)
        try migrated.execute(Self.newRows)
    }

    @Test func postgresVersion7GetsTheKeyRingAndKeepsItsChains() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v7.sql"), encoding: .utf8))
        try connection.execute(Self.rows(flag: "postgresql"))
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query(Self.chain) == [["7", "3", Self.jkt, "0", nil]])
        #expect(try connection.query("SELECT count(*) FROM webhook_deliveries") == [["0"]])
        #expect(try connection.query("SELECT count(*) FROM token_keys") == [["0"]])
        try connection.execute(Self.newRows)
    }
}

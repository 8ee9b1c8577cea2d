@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 8 to 9 ("last used" on the chain's row, issue 28 finding 3), on both stores: a
/// database made with version 8's schema file (Tests/Fixtures) with audit history is migrated
/// at open, and each chain's `last_used_*` is what version 8's session list read from the audit
/// table: the newest login, exchange, retry or step-up, whatever non-use events came after it.
@Suite(.serialized)
struct SchemaVersion9Tests {
    static let fixtures = SchemaVersion4Tests.fixtures

    /// alice with three chains: 7 used (login, exchange) then refused twice, 8 never used, 9
    /// used by a login, a step-up and a lost-response retry (the newest, at 35, with no address).
    static func rows(flag: String) -> String {
        let hash = flag == "sqlite" ? "zeroblob(32)" : "decode(repeat('00', 32), 'hex')"
        return """
            INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1);
            INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at,
                                head_expires_at, auth_time)
              VALUES (7, 1, 'phone-1', 'mobile', 1, 1, \(hash), 1, 2, 1),
                     (8, 1, 'laptop-1', 'desktop', 1, 0, \(hash), 1, 2, 1),
                     (9, 1, 'tablet-1', 'other', 1, 1, \(hash), 1, 2, 1);
            INSERT INTO audit (id, at, kind, user_id, chain_id, ip, user_agent, detail) VALUES
              (1, 10, 'login_succeeded', 1, 7, '192.0.2.1', 'Phone/1', '{}'),
              (2, 20, 'exchanged', 1, 7, '192.0.2.2', 'Phone/2', '{}'),
              (3, 30, 'proof_failed', 1, 7, '203.0.113.9', 'Flood/1', '{}'),
              (4, 40, 'step_up_failed', 1, 7, '203.0.113.9', 'Flood/1', '{}'),
              (5, 15, 'login_succeeded', 1, 9, '192.0.2.5', 'Tablet/1', '{}'),
              (6, 25, 'step_up_succeeded', 1, 9, '192.0.2.6', 'Tablet/1', '{}'),
              (7, 35, 'exchange_retried', 1, 9, NULL, 'Tablet/2', '{}'),
              (8, 45, 'login_failed', 1, 8, '203.0.113.9', 'Flood/1', '{}');
            """
    }

    /// Version 8's read of each chain's last use (`sessionActivity(of:)` before version 9), for all chains at once.
    static let version8Read = """
        SELECT c.id, a.at, a.ip, a.user_agent FROM chains c
        LEFT JOIN audit a ON a.id = (SELECT max(id) FROM audit WHERE chain_id = c.id
                                     AND kind IN ('login_succeeded', 'exchanged', 'exchange_retried', 'step_up_succeeded'))
        ORDER BY c.id
        """
    static let version9Read = "SELECT id, last_used_at, last_used_ip, last_used_user_agent FROM chains ORDER BY id"
    static let expected: [[String?]] = [["7", "20", "192.0.2.2", "Phone/2"], ["8", nil, nil, nil], ["9", "35", nil, "Tablet/2"]]

    @Test func sqliteVersion8KeepsEachChainsLastUseOnItsRow() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v8.db"
        let before: [[String?]]
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v8.sql"), encoding: .utf8))
            try connection.execute(Self.rows(flag: "sqlite"))
            before = try connection.statement(Self.version8Read).all { row in (0..<row.columnCount).map { row.optionalText($0) } }
        }
        #expect(before == Self.expected)
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement(Self.version9Read).all { row in (0..<row.columnCount).map { row.optionalText($0) } } == before)
        #expect(try migrated.statement("SELECT count(*) FROM audit").first { $0.int(0) } == 8)  // the audit as it was
    }

    @Test func postgresVersion8KeepsEachChainsLastUseOnItsRow() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v8.sql"), encoding: .utf8))
        try connection.execute(Self.rows(flag: "postgresql"))
        let before = try connection.query(Self.version8Read)
        #expect(before == Self.expected)
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query(Self.version9Read) == before)
        // The columns as a new database has them, in the same order.
        let columns = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'chains' ORDER BY ordinal_position"
        let freshURI = try await SharedPostgres.shared.newDatabaseURI()
        try PostgresStore(uri: freshURI, key: nil).close()
        let fresh = try PostgresConnection(uri: freshURI, statementTimeout: .seconds(10))
        defer { fresh.close() }
        #expect(try connection.query(columns) == fresh.query(columns))
    }
}

@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 6 to 7 (each pending webhook event's own row, `webhook_deliveries`), on both stores:
/// a database made with version 6's schema file (Tests/Fixtures) whose endpoint had delivered
/// event 1 (its cursor) and not yet events 2 and 3 is migrated at open. Nothing undelivered is
/// lost: 2 (an alert) and 3 (bulk) are pending for it, 4 (a type it does not take) is not.
@Suite(.serialized)
struct SchemaVersion7Tests {
    static let fixtures = SchemaVersion4Tests.fixtures

    static let rows = """
        INSERT INTO webhook_outbox (id, message_id, type, at, body) VALUES
          (1, 'msg_1', 'user.disabled', 1, '{}'), (2, 'msg_2', 'token.reuse_detected', 2, '{}'),
          (3, 'msg_3', 'login.new_device', 3, '{}'), (4, 'msg_4', 'device.proof_rejected', 4, '{}');
        INSERT INTO webhook_endpoints (url, cursor, event_types, attempts, next_attempt_at, first_failed_at)
          VALUES ('https://a.example/hook', 1, 'login.new_device,token.reuse_detected,user.disabled', 3, 99, 1);
        """

    static let pending = "SELECT endpoint, event_id, alert, due_at, attempts FROM webhook_deliveries ORDER BY event_id"

    @Test func sqliteVersion6KeepsEveryUndeliveredEventPending() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v6.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v6.sql"), encoding: .utf8))
            try connection.execute(Self.rows)
        }
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement(Self.pending).all { row in (0..<5).map { row.optionalText($0) ?? "" }.joined(separator: "|") }
                == ["https://a.example/hook|2|1|0|0", "https://a.example/hook|3|0|0|0"])
    }

    @Test func postgresVersion6KeepsEveryUndeliveredEventPending() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v6.sql"), encoding: .utf8))
        try connection.execute(Self.rows)
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query(Self.pending) == [["https://a.example/hook", "2", "t", "0", "0"], ["https://a.example/hook", "3", "f", "0", "0"]])
    }
}

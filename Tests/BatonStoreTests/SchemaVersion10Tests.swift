@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Version 9 to 10 (`chains.head_attempt`, R3b), on both stores: a database made with version
/// 9's schema file (Tests/Fixtures) is migrated at open, every chain keeps every column it had
/// (version 9's last use included) and gets no attempt number, as a head made before numbers.
@Suite(.serialized)
struct SchemaVersion10Tests {
    static let fixtures = SchemaVersion4Tests.fixtures

    static func rows(flag: String) -> String {
        let hash = flag == "sqlite" ? "zeroblob(32)" : "decode(repeat('00', 32), 'hex')"
        return """
            INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1);
            INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at,
                                head_expires_at, auth_time, head_key, last_used_at, last_used_ip, last_used_user_agent)
              VALUES (7, 1, 'phone-1', 'mobile', 1, 4, \(hash), 3, 9, 1, 2, 20, '192.0.2.2', 'Phone/2'),
                     (8, 1, 'laptop-1', 'desktop', 1, 0, \(hash), 1, 2, 1, 0, NULL, NULL, NULL);
            """
    }

    static let read = """
        SELECT id, head_generation, head_key, last_used_at, last_used_ip, last_used_user_agent, head_attempt FROM chains ORDER BY id
        """
    static let expected: [[String?]] = [["7", "4", "2", "20", "192.0.2.2", "Phone/2", nil], ["8", "0", "0", nil, nil, nil, nil]]

    @Test func sqliteVersion9KeepsEveryColumnAndGetsNoAttemptNumbers() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v9.db"
        do {
            let connection = try Connection(path: path)
            defer { connection.close() }
            try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v9.sql"), encoding: .utf8))
            try connection.execute(Self.rows(flag: "sqlite"))
        }
        let migrated = try SchemaTests.migratedAtOpen(path, comparedWith: db.path)
        defer { migrated.close() }
        #expect(try migrated.statement(Self.read).all { row in (0..<row.columnCount).map { row.optionalText($0) } } == Self.expected)
    }

    @Test func postgresVersion9KeepsEveryColumnAndGetsNoAttemptNumbers() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(10))
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-postgresql-v9.sql"), encoding: .utf8))
        try connection.execute(Self.rows(flag: "postgresql"))
        try PostgresStore(uri: uri, key: nil, options: { var o = PostgresStore.Options(); o.createSchema = false; return o }()).close()
        #expect(try connection.query("SELECT version FROM baton_schema") == [[String(PostgresSchema.version)]])
        #expect(try connection.query(Self.read) == Self.expected)
        // The columns as a new database has them, in the same order.
        let columns = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'chains' ORDER BY ordinal_position"
        let freshURI = try await SharedPostgres.shared.newDatabaseURI()
        try PostgresStore(uri: freshURI, key: nil).close()
        let fresh = try PostgresConnection(uri: freshURI, statementTimeout: .seconds(10))
        defer { fresh.close() }
        #expect(try connection.query(columns) == fresh.query(columns))
    }
}

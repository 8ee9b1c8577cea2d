@testable import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// A real version-1 database (built from the v1 schema text kept in Tests/Fixtures) opened by
/// this build: migrated in place, data intact, schema identical to a fresh version-2 file.
/// SQLite only: the version-1 files are SQLite's (PostgreSQL support began with version 2).
struct MigrationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let t0: Int64 = 1_790_000_000_000

    /// A version-1 file with two users, three chains (live, revoked, exchanged twice), lineage
    /// and audit rows. Returns the live chain's head token, issued with the file's key.
    func makeVersion1Database(at path: String) throws -> (token: String, chain: ChainID) {
        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
        let codec = TokenCodec(key: key)
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v1.sql"), encoding: .utf8))
        let hasher = PasswordHasher(concurrency: 1)
        let live = ChainID(rawValue: 0x1111), revoked = ChainID(rawValue: 0x2222), exchanged = ChainID(rawValue: 0x3333)
        let head = codec.issue(chainID: exchanged, generation: 2)
        try connection.transaction { () throws(SQLiteError) in
            for (id, name) in [(1, "alice"), (2, "bob")] {
                try connection.statement("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (?, ?, ?, ?, ?)")
                    .execute([.int(Int64(id)), .text(name), .text((try? hasher.hash("correct horse battery")) ?? ""), .int(Self.t0), .int(Self.t0)])
            }
            let insert = try connection.statement("""
                INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash,
                                    head_issued_at, head_expires_at, head_presented, last_exchange_at, revoked_at, revoked_reason)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            try insert.execute([.int(live.rawValue), .int(1), .text("phone-1"), .text("mobile"), .text("Alice's phone"), .int(Self.t0),
                                .int(0), .blob(codec.issue(chainID: live, generation: 0).hash.bytes), .int(Self.t0), .int(Self.t0 + 900_000),
                                .int(0), .null, .null, .null])
            try insert.execute([.int(revoked.rawValue), .int(2), .text("laptop"), .text("desktop"), .null, .int(Self.t0 + 1000),
                                .int(1), .blob(Array(repeating: 7, count: 32)), .int(Self.t0 + 2000), .int(Self.t0 + 902_000),
                                .int(1), .int(Self.t0 + 2000), .int(Self.t0 + 3000), .text("reuse_detected")])
            // The clock of this test is far past t0, so the chain is created "now" to stay live.
            let now = SystemClock().now().milliseconds
            try insert.execute([.int(exchanged.rawValue), .int(1), .text("tablet"), .text("other"), .null, .int(now - 60_000),
                                .int(2), .blob(head.hash.bytes), .int(now), .int(now + 900_000),
                                .int(0), .int(now), .null, .null])
            for generation in 0..<2 {
                try connection.statement("""
                    INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id)
                    VALUES (?, ?, ?, ?, ?, 'exchanged', '192.0.2.1', 'App/1', 'tablet')
                    """).execute([.int(exchanged.rawValue), .int(Int64(generation)), .blob(Array(repeating: UInt8(generation + 1), count: 32)),
                                  .int(now - 60_000), .int(now)])
            }
            try connection.statement("INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by) VALUES (?, 0, ?, ?, ?, 'exchanged')")
                .execute([.int(revoked.rawValue), .blob(Array(repeating: 9, count: 32)), .int(Self.t0 + 1000), .int(Self.t0 + 2000)])
            for (index, kind) in ["user_created", "login_succeeded", "exchanged", "reuse_detected", "chain_revoked", "password_changed"].enumerated() {
                try connection.statement("INSERT INTO audit (at, kind, user_id, username, chain_id, generation, ip, detail) VALUES (?, ?, 1, 'alice', ?, 0, '192.0.2.1', ?)")
                    .execute([.int(Self.t0 + Int64(index)), .text(kind), .int(revoked.rawValue), .text(#"{"n":\#(index)}"#)])
            }
        }
        return (head.text, exchanged)
    }

    /// A version-4 database (Tests/Fixtures/schema-v4.sql, the schema before webhooks) with one
    /// user and two chains on one device, then opened by this build: the current version, the webhook
    /// tables as a fresh file has them, and the device in use already known (an upgrade
    /// reports no `login.new_device` for it).
    @Test func version4DatabaseGetsTheWebhookTablesAndKnowsTheDevicesInUse() throws {
        let db = try TemporaryDatabase()  // a fresh file to compare with
        let path = db.directory + "/v4.db"
        let connection = try Connection(path: path)
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v4.sql"), encoding: .utf8))
        try connection.execute("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1)")
        for (id, createdAt) in [(7, 5), (8, 3)] {
            try connection.execute("""
                INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time)
                VALUES (\(id), 1, 'phone-1', 'mobile', \(createdAt), 0, zeroblob(32), 1, 2, 1)
                """)
        }
        let v4Chains = try Self.dump(connection, "SELECT * FROM chains ORDER BY id")
        connection.close()
        try TokenStore(path: path, key: nil, options: { var o = TokenStore.Options(); o.create = false; return o }()).close()
        let migrated = try Connection(path: path)
        defer { migrated.close() }
        let fresh = try Connection(path: db.path)
        defer { fresh.close() }
        #expect(try SchemaTests.master(migrated) == SchemaTests.master(fresh))
        #expect(try migrated.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
        // Every chain as it was, unbound (jkt NULL, version 6), never used (no use in the audit, version 9).
        #expect(try Self.dump(migrated, "SELECT * FROM chains ORDER BY id") == v4Chains.map { $0 + "|NULL|0|NULL|NULL|NULL|NULL" })
        #expect(try Self.dump(migrated, "SELECT user_id, device_id, first_seen FROM known_devices") == ["1|phone-1|3"])
        #expect(try Self.dump(migrated, "SELECT count(*) FROM webhook_outbox") == ["0"])
    }

    /// A version-5 database (Tests/Fixtures/schema-v5.sql, the schema before DPoP) with a live
    /// chain and its audit, opened by this build: version 6 with schema.sql's exact definitions,
    /// every row kept, every chain unbound (`jkt` NULL, so it keeps working as Bearer), and the
    /// new constraints in force (`proof_failed` accepted, a `jkt` of the wrong length refused).
    @Test func version5DatabaseGetsTheKeyBindingColumnWithEveryChainUnbound() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/v5.db"
        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
        let codec = TokenCodec(key: key)
        let chain = ChainID(rawValue: 0x5555)
        let head = codec.issue(chainID: chain, generation: 0)
        let now = SystemClock().now().milliseconds
        let connection = try Connection(path: path)
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v5.sql"), encoding: .utf8))
        try connection.execute("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1)")
        try connection.statement("""
            INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time)
            VALUES (?, 1, 'phone-1', 'mobile', ?, 0, ?, ?, ?, ?)
            """).execute([.int(chain.rawValue), .int(now), .blob(head.hash.bytes), .int(now), .int(now + 900_000), .int(now)])
        try connection.execute("INSERT INTO audit (at, kind, user_id, username, chain_id, detail) VALUES (1, 'login_succeeded', 1, 'alice', \(chain.rawValue), '{}')")
        let v5Chains = try Self.dump(connection, "SELECT * FROM chains ORDER BY id")
        let v5Audit = try Self.dump(connection, "SELECT * FROM audit ORDER BY id")
        connection.close()

        try TokenStore(path: path, key: key).close()
        let migrated = try Connection(path: path)
        defer { migrated.close() }
        let fresh = try Connection(path: db.path)
        defer { fresh.close() }
        #expect(try SchemaTests.master(migrated) == SchemaTests.master(fresh))
        #expect(try migrated.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
        // Last used (version 9): its login, the one use in the audit (at 1, no address or User-Agent).
        #expect(try Self.dump(migrated, "SELECT * FROM chains ORDER BY id") == v5Chains.map { $0 + "|NULL|0|1|NULL|NULL|NULL" })
        // The rows as they were (the first open with the key adds `key_recorded` after them).
        #expect(try Array(Self.dump(migrated, "SELECT * FROM audit ORDER BY id").prefix(v5Audit.count)) == v5Audit)
        let store = try TokenStore(path: path, key: key)
        #expect(try store.verify(head.text).chainID == chain)  // a bearer chain, as before
        store.close()
        try migrated.execute("INSERT INTO audit (at, kind, detail) VALUES (1, 'proof_failed', '{}')")
        #expect(throws: SQLiteError.self) { try migrated.execute("UPDATE chains SET jkt = 'short' WHERE id = \(chain.rawValue)") }
        try migrated.execute("UPDATE chains SET jkt = '\(String(repeating: "A", count: 43))' WHERE id = \(chain.rawValue)")
    }

    static func dump(_ connection: Connection, _ sql: String) throws -> [String] {
        try connection.statement(sql).all { row in (0..<row.columnCount).map { row.isNull($0) ? "NULL" : row.text($0) }.joined(separator: "|") }
    }

    @Test func version1DatabaseIsMigratedInPlaceWithEveryRowAndTheVersion2Schema() throws {
        let db = try TemporaryDatabase()  // a fresh version-2 file to compare with
        let path = db.directory + "/v1.db"
        let (token, chainID) = try makeVersion1Database(at: path)
        let before = try Connection(path: path)
        let v1Users = try Self.dump(before, "SELECT * FROM users ORDER BY id")
        let v1Chains = try Self.dump(before, "SELECT * FROM chains ORDER BY id")
        let v1Tokens = try Self.dump(before, "SELECT * FROM tokens ORDER BY chain_id, generation")
        let v1Audit = try Self.dump(before, "SELECT * FROM audit ORDER BY id")
        before.close()

        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: false)
        let store = try TokenStore(path: path, key: key)
        // The migrated file works: the v1 head verifies with auth_time = its login, and exchanges.
        let verified = try store.verify(token)
        #expect(verified.chainID == chainID)
        #expect(verified.authTime.milliseconds == (try store.chains(includeEnded: true).first { $0.head.id == chainID }?.head.createdAt.milliseconds))
        #expect(try store.exchange(token).generation == 3)
        store.close()

        let migrated = try Connection(path: path)
        defer { migrated.close() }
        let fresh = try Connection(path: db.path)
        defer { fresh.close() }
        #expect(try SchemaTests.master(migrated) == SchemaTests.master(fresh))
        #expect(try migrated.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
        #expect(try Self.dump(migrated, "PRAGMA integrity_check") == ["ok"])
        #expect(try Self.dump(migrated, "PRAGMA foreign_key_check").isEmpty)
        #expect(try Self.dump(migrated, "SELECT * FROM users ORDER BY id") == v1Users)
        // Every v1 column as it was; auth_time = created_at, confirm_failures = 0.
        #expect(try Self.dump(migrated, """
            SELECT id, user_id, device_id, device_class, device_name, created_at, head_generation, head_hash, head_issued_at,
                   head_expires_at, head_presented, last_exchange_at, revoked_at, revoked_reason FROM chains WHERE id != \(chainID.rawValue) ORDER BY id
            """) == v1Chains.filter { !$0.hasPrefix("\(chainID.rawValue)|") })
        #expect(try Self.dump(migrated, "SELECT count(*) FROM chains WHERE auth_time != created_at OR confirm_failures != 0") == ["0"])
        #expect(try Self.dump(migrated, "SELECT * FROM tokens WHERE NOT (chain_id = \(chainID.rawValue) AND generation = 2) ORDER BY chain_id, generation") == v1Tokens)
        #expect(try Array(Self.dump(migrated, "SELECT * FROM audit ORDER BY id").prefix(v1Audit.count)) == v1Audit)
        // Version 2's constraints are in force, and tokens still cascade from the new chains table.
        try migrated.execute("UPDATE chains SET revoked_at = 1, revoked_reason = 'confirm_failed' WHERE id = \(chainID.rawValue)")
        try migrated.execute("INSERT INTO audit (at, kind, detail) VALUES (1, 'step_up_failed', '{}')")
        #expect(throws: SQLiteError.self) { try migrated.execute("INSERT INTO audit (at, kind, detail) VALUES (1, 'party', '{}')") }
        try migrated.execute("DELETE FROM chains WHERE id = \(chainID.rawValue)")
        #expect(try Self.dump(migrated, "SELECT count(*) FROM tokens WHERE chain_id = \(chainID.rawValue)") == ["0"])
    }

    /// A version-2 database (Tests/Fixtures/schema-v2.sql) with one user and one chain.
    func makeVersion2Database(at path: String) throws {
        let connection = try Connection(path: path)
        defer { connection.close() }
        try connection.execute(try String(contentsOf: Self.fixtures.appendingPathComponent("schema-v2.sql"), encoding: .utf8))
        try connection.execute("INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1)")
        try connection.execute("""
            INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time)
            VALUES (7, 1, 'phone-1', 'mobile', 1, 0, zeroblob(32), 1, 2, 1)
            """)
        try connection.execute("INSERT INTO audit (at, kind, user_id, username, detail) VALUES (1, 'user_created', 1, 'alice', '{}')")
    }

    @Test func version2DatabaseIsMigratedAndRecordsTheKeyItIsFirstStartedWith() throws {
        let db = try TemporaryDatabase()  // a fresh file to compare with
        let path = db.directory + "/v2.db"
        try makeVersion2Database(at: path)
        let before = try Connection(path: path)
        let v2Audit = try Self.dump(before, "SELECT * FROM audit ORDER BY id")
        before.close()
        // An admin command (no key) migrates it and records nothing.
        try TokenStore(path: path, key: nil, options: { var o = TokenStore.Options(); o.create = false; return o }()).close()
        let afterAdmin = try Connection(path: path)
        #expect(try afterAdmin.statement("PRAGMA user_version").first { $0.int(0) } == Schema.version)
        #expect(try Self.dump(afterAdmin, "SELECT count(*) FROM key_fingerprint") == ["0"])
        #expect(try Self.dump(afterAdmin, "SELECT * FROM audit ORDER BY id") == v2Audit)
        afterAdmin.close()
        // The first start with a key records that key (there is nothing to compare it with), audited.
        let key = TokenKey.generate()
        var options = TokenStore.Options()
        options.keyFilePath = "/etc/baton/v2.key"
        try TokenStore(path: path, key: key, options: options).close()
        let migrated = try Connection(path: path)
        defer { migrated.close() }
        let fresh = try Connection(path: db.path)
        defer { fresh.close() }
        #expect(try SchemaTests.master(migrated) == SchemaTests.master(fresh))
        #expect(try Self.dump(migrated, "PRAGMA integrity_check") == ["ok"])
        #expect(try Self.dump(migrated, "SELECT fingerprint FROM key_fingerprint") == [key.fingerprint])
        #expect(try Self.dump(migrated, "SELECT kind, detail FROM audit WHERE id > 1")
                == [#"key_recorded|{"fingerprint":"\#(key.fingerprint)","key_file":"/etc/baton/v2.key"}"#])
        #expect(try Self.dump(migrated, "SELECT id, user_id, device_id, auth_time FROM chains") == ["7|1|phone-1|1"])
        // Another key is refused from now on, naming both files.
        var other = TokenStore.Options()
        other.keyFilePath = "/tmp/other.key"
        let error = batonStoreError { _ = try TokenStore(path: path, key: TokenKey.generate(), options: other) }
        guard case .keyMismatch(let keyPath, let databasePath, _, _)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(keyPath == "/tmp/other.key" && databasePath == path)
    }

    @Test func aMigrationThatFindsBrokenForeignKeysRollsBackAndLeavesVersion1() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/broken.db"
        _ = try makeVersion1Database(at: path)
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA foreign_keys = OFF")
        try connection.execute("INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at) VALUES (77, 999, 'd', 'mobile', 1, 0, zeroblob(32), 1, 1)")
        connection.close()
        let error = batonStoreError { _ = try TokenStore(path: path, key: nil) }
        guard case .sqlite(let sqlite, _)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(sqlite.message.contains("foreign key violations in [\"chains\"]"))
        let after = try Connection(path: path)
        defer { after.close() }
        #expect(try after.statement("PRAGMA user_version").first { $0.int(0) } == 1)
        #expect(try after.statement("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v1'").first { $0.int(0) } == 0)
        #expect(try Self.dump(after, "SELECT count(*) FROM chains") == ["4"])
    }
}

/// The `StoreError` a throwing call threw.
func batonStoreError(_ body: () throws -> Void) -> StoreError? {
    do {
        try body()
        return nil
    } catch {
        return error as? StoreError
    }
}

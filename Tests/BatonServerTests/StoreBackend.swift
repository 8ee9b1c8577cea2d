import Foundation

/// The two stores `baton serve` and `baton admin` run on: the admin tests run against both
/// (`@Test(arguments: StoreBackend.allCases)`), the way the store tests do.
enum StoreBackend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgresql
    var description: String { rawValue }
}

extension ServerProcess {
    /// A running `baton serve` on a fresh database of `backend`: a temporary SQLite file, or
    /// a new database in the test process's PostgreSQL cluster with a new key file. The
    /// server's `databasePath` is what `--db` takes for either.
    static func start(on backend: StoreBackend, _ arguments: [String] = []) async throws -> ServerProcess {
        switch backend {
        case .sqlite:
            return try await offPool { try ServerProcess(arguments) }
        case .postgresql:
            let uri = try await SharedPostgres.shared.newDatabaseURI()
            let directory = NSTemporaryDirectory() + "baton-pg-e2e-" + UUID().uuidString
            return try await offPool { () throws -> ServerProcess in
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                return try ServerProcess(["--key-file", directory + "/baton.key", "--new-key"] + arguments, directory: directory, database: uri)
            }
        }
    }
}

extension ServerProcess {
    /// Another `baton serve` with this one's flags on the same database, directory and key
    /// file (without `--new-key`, which only the first start needs): a restart after this one
    /// stopped or was killed. Keep this one until the last restart: each removes the directory
    /// when it goes.
    func restarted() throws -> ServerProcess {
        try ServerProcess(arguments.filter { $0 != "--new-key" }, directory: directory, database: databasePath, environment: environment)
    }
}

/// Loads Tests/Fixtures/schema-postgresql-v`version`.sql into the empty database `uri` with one
/// user (alice, id 1) and one chain (7, device phone-1, created at 5), then lets this build's
/// `baton admin stats` open (and so migrate) it. Returns stats' status and standard error.
func migrateOlderPostgres(version: Int, uri: String) throws -> String {
    let psql = try PostgresBinaries.find()
    let schema = try String(contentsOfFile: repositoryRoot + "/Tests/Fixtures/schema-postgresql-v\(version).sql", encoding: .utf8)
    _ = try psql.psql(schema, uri: uri)
    _ = try psql.psql("""
        INSERT INTO users (id, username, password_hash, created_at, password_changed_at) VALUES (1, 'alice', 'x', 1, 1);
        INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash, head_issued_at, head_expires_at, auth_time)
        VALUES (7, 1, 'phone-1', 'mobile', 5, 0, decode(repeat('00', 32), 'hex'), 1, 2, 1)
        """, uri: uri)
    let (status, _, err) = try runBaton(["admin", "stats", "--db", uri])
    return String(status) + err
}

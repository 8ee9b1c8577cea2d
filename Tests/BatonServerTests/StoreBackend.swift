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

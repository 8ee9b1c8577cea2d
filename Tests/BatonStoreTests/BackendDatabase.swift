@testable import BatonCore
@testable import BatonPostgres
@testable import BatonStore
import BatonStorage
import BatonTestSupport
import Foundation

/// The two stores the store tests run against (one suite, two backends).
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgresql
    var description: String { rawValue }
}

/// A fresh database of one backend (a temporary SQLite file, or a new database in the test
/// process's PostgreSQL cluster), its store, and a hand-moved clock.
final class BackendDatabase: @unchecked Sendable {
    let backend: Backend
    let clock = ManualClock()
    /// The SQLite file's path, or the PostgreSQL URI.
    let location: String
    private let key = TokenKey.generate()
    private let hashing: Hashing
    private let directory: String?
    private(set) var store: StoreHandle

    /// How the stores hash passwords.
    enum Hashing {
        /// The stores' defaults (argon2id at its real cost, half the cores at once).
        case standard
        /// Cheap argon2id and 8 hashes at once, so that racing logins and password changes
        /// overlap in the database instead of queueing for the hasher.
        case cheap
    }

    init(_ backend: Backend, policy: Policy = Policy(), clock: (any WallClock)? = nil, hashing: Hashing = .standard) async throws {
        self.backend = backend
        self.hashing = hashing
        switch backend {
        case .sqlite:
            let directory = try TestDirectories.make()
            self.directory = directory
            location = directory + "/baton.db"
        case .postgresql:
            directory = nil
            location = try await SharedPostgres.shared.newDatabaseURI()
        }
        store = StoreHandle(try Self.open(backend, location, key: key, policy: policy, clock: clock ?? self.clock, hashing: hashing))
    }

    private static func open(_ backend: Backend, _ location: String, key: TokenKey, policy: Policy, clock: any WallClock, hashing: Hashing) throws -> any LineageStore {
        let parameters = { var cheap = PasswordHasher.Parameters(); cheap.memoryKiB = 1024; cheap.iterations = 1; return cheap }()
        switch backend {
        case .sqlite:
            var options = TokenStore.Options()
            if hashing == .cheap { (options.hashParameters, options.hashConcurrency) = (parameters, 8) }
            return try TokenStore(path: location, key: key, policy: policy, clock: clock, options: options)
        case .postgresql:
            var options = PostgresStore.Options()
            if hashing == .cheap { (options.hashParameters, options.hashConcurrency) = (parameters, 8) }
            return try PostgresStore(uri: location, key: key, policy: policy, clock: clock, options: options)
        }
    }

    /// The store's admin operations (`baton admin`'s view of it).
    var admin: any AdminStore { store.base as! any AdminStore }

    /// Another store on the same database, with the same key, policy and clock: another
    /// process (a second instance, or `baton admin` beside the server). The caller closes it.
    func anotherStore(policy: Policy = Policy()) throws -> any LineageStore & AdminStore {
        try Self.open(backend, location, key: key, policy: policy, clock: clock, hashing: hashing) as! any LineageStore & AdminStore
    }

    /// Closes the store and opens it again on the same database (a restart).
    func reopen(policy: Policy = Policy(), clock: (any WallClock)? = nil) throws {
        store.base.close()
        store = StoreHandle(try Self.open(backend, location, key: key, policy: policy, clock: clock ?? self.clock, hashing: hashing))
    }

    deinit {
        store.base.close()
        if let directory { TestDirectories.remove(directory) }
    }

    /// Creates `username` (unless it exists) and logs in from `device`.
    @discardableResult
    func login(_ username: String = "alice", device: String = "phone-1", deviceClass: DeviceClass = .mobile, ip: String = "192.0.2.10") throws -> TokenBundle {
        do { _ = try store.base.createUser(username, password: "correct horse battery", context: .admin) } catch .userExists {}
        return try store.login(LoginRequest(username: username, password: "correct horse battery", deviceID: device, deviceClass: deviceClass),
                               context: RequestContext(ip: ip, userAgent: "TestApp/1.0"))
    }
}

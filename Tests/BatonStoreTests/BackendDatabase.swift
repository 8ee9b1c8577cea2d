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
    private let directory: String?
    private(set) var store: StoreHandle

    init(_ backend: Backend, policy: Policy = Policy(), clock: (any WallClock)? = nil) async throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "baton-test-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            self.directory = directory
            location = directory + "/baton.db"
        case .postgresql:
            directory = nil
            location = try await SharedPostgres.shared.newDatabaseURI()
        }
        store = StoreHandle(try Self.open(backend, location, key: key, policy: policy, clock: clock ?? self.clock))
    }

    private static func open(_ backend: Backend, _ location: String, key: TokenKey, policy: Policy, clock: any WallClock) throws -> any LineageStore {
        switch backend {
        case .sqlite: try TokenStore(path: location, key: key, policy: policy, clock: clock)
        case .postgresql: try PostgresStore(uri: location, key: key, policy: policy, clock: clock)
        }
    }

    /// The store's admin operations (`baton admin`'s view of it).
    var admin: any AdminStore { store.base as! any AdminStore }

    /// Another store on the same database, with the same key, policy and clock: another
    /// process (a second instance, or `baton admin` beside the server). The caller closes it.
    func anotherStore(policy: Policy = Policy()) throws -> any LineageStore & AdminStore {
        try Self.open(backend, location, key: key, policy: policy, clock: clock) as! any LineageStore & AdminStore
    }

    /// Closes the store and opens it again on the same database (a restart).
    func reopen(policy: Policy = Policy(), clock: (any WallClock)? = nil) throws {
        store.base.close()
        store = StoreHandle(try Self.open(backend, location, key: key, policy: policy, clock: clock ?? self.clock))
    }

    deinit {
        store.base.close()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Creates `username` (unless it exists) and logs in from `device`.
    @discardableResult
    func login(_ username: String = "alice", device: String = "phone-1", deviceClass: DeviceClass = .mobile, ip: String = "192.0.2.10") throws -> TokenBundle {
        do { _ = try store.base.createUser(username, password: "correct horse battery", context: .admin) } catch .userExists {}
        return try store.login(LoginRequest(username: username, password: "correct horse battery", deviceID: device, deviceClass: deviceClass),
                               context: RequestContext(ip: ip, userAgent: "TestApp/1.0"))
    }

    /// Audit rows, oldest first, read straight from the database.
    func auditEvents(kind: AuditKind? = nil) throws -> [(kind: String, chainID: Int64?, generation: Int64?, ip: String?, detail: String)] {
        let rows: [(kind: String, chainID: Int64?, generation: Int64?, ip: String?, detail: String)]
        switch backend {
        case .sqlite:
            let connection = try Connection(path: location)
            defer { connection.close() }
            rows = try connection.statement("SELECT kind, chain_id, generation, ip, detail FROM audit ORDER BY id").all {
                (kind: $0.text(0), chainID: $0.optionalInt(1), generation: $0.optionalInt(2), ip: $0.optionalText(3), detail: $0.text(4))
            }
        case .postgresql:
            let connection = try PostgresConnection(uri: location, statementTimeout: .seconds(10))
            defer { connection.close() }
            rows = try connection.query("SELECT kind, chain_id, generation, ip, detail FROM audit ORDER BY id").map {
                (kind: $0[0] ?? "", chainID: $0[1].flatMap { Int64($0) }, generation: $0[2].flatMap { Int64($0) }, ip: $0[3], detail: $0[4] ?? "")
            }
        }
        return rows.filter { kind == nil || $0.kind == kind!.rawValue }
    }
}

/// A store as the tests call it: the protocol's operations with the defaults the concrete
/// stores give (no context, no max_age).
struct StoreHandle: Sendable {
    let base: any LineageStore
    init(_ base: any LineageStore) { self.base = base }

    func login(_ request: LoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try base.login(request, context: context)
    }
    func exchange(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try base.exchange(token, context: context)
    }
    func verify(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification {
        try base.verify(token, maxAge: maxAge, context: context)
    }
    func logout(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) {
        try base.logout(token, context: context)
    }
    func close() { base.close() }
}

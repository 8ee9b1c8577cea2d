import BatonAPI
import BatonCore
import BatonHTTP
import BatonStorage
import BatonStore
import Foundation

/// The server of one simulated world: Baton's API (`API.respond` and `respondOnLoop`, the
/// whole request-to-response path) over `TokenStore`, a real SQLite database in a directory of
/// its own (on tmpfs where there is one: fsync costs nothing there, and the simulation explores
/// schedules, not disks), on the simulated clock. Every call is synchronous on the simulation's driving thread.
final class SimServer: @unchecked Sendable {
    /// The public URL proofs name (the simulated client's base URL).
    static let publicURL = "http://baton.sim"
    static let username = "alice"
    static let password = "correct horse battery"
    /// Short tokens, so that a run sees many lifetimes; the rest are Baton's defaults.
    static let policy: Policy = {
        var policy = Policy()
        policy.tokenTTL = .seconds(120)
        return policy
    }()

    let directory: String
    private let key = TokenKey.generate()
    private let clock: SimWallClock
    private(set) var store: TokenStore
    private(set) var api: API
    private let peer = IPAddress("192.0.2.10")!

    /// A fresh database with alice.
    init(directory: String, clock: SimWallClock) throws {
        self.directory = directory
        self.clock = clock
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        (store, api) = try Self.open(directory, key: key, clock: clock)
        _ = try store.createUser(Self.username, password: Self.password, context: RequestContext())
    }

    private static func open(_ directory: String, key: TokenKey, clock: SimWallClock) throws -> (TokenStore, API) {
        var options = TokenStore.Options()
        options.hashParameters.memoryKiB = 1024  // cheap argon2id: the simulation is not about hashing
        options.hashParameters.iterations = 1
        options.hashConcurrency = 1
        options.keyRing.watches = false  // one store, read again by its own rotations; no thread
        options.keyRing.monotonicNow = { SimClock.now.nanoseconds }
        let store = try TokenStore(path: directory + "/baton.db", key: key, policy: policy, clock: clock, options: options)
        var apiOptions = API.Options()
        apiOptions.accessLog = false
        apiOptions.securityLog = false
        apiOptions.dpop.publicURL = publicURL
        apiOptions.dpop.clock = clock
        return (store, API(store: store, options: apiOptions))
    }

    /// The answer to one request, dispatched as an event loop dispatches it (`EventLoop.process`):
    /// a request that may block as a worker runs it, the others as the loop starts them (a
    /// verify from memory, an exchange answered from the writer's thread), waited for here.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        api.mayBlock(request) ? api.respond(to: request, from: peer) : api.respondOnLoop(to: request, from: peer).waitedFor()
    }

    /// Stops and starts again on the same database and key (memory, caches and the proof
    /// replay cache are lost; everything committed stays).
    func restart() throws {
        api.close()
        store.close()
        (store, api) = try Self.open(directory, key: key, clock: clock)
    }

    /// `baton admin key rotate`: new tokens are made with a new key; every live token still works.
    func rotateKey() throws { _ = try store.rotateKey(context: RequestContext()) }

    /// Whether `token` is accepted now, asked without presenting it (RFC 7662 introspection
    /// records nothing): the observer's view of "which tokens verify".
    func accepts(_ token: String) -> Bool { ((try? store.introspect(token)) ?? nil) != nil }

    /// Whether the chain is revoked, and why.
    func revocation(of chainHex: String) -> String? {
        guard let id = ChainID(hex: chainHex), let lineage = try? store.lineage(of: id) else { return nil }
        return lineage.revocation?.rawValue
    }

    func close() {
        api.close()
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The server's wall clock: the simulation's time from a fixed epoch.
struct SimWallClock: WallClock {
    /// 2027-01-15T08:00:00Z, in milliseconds.
    static let epochMilliseconds: Int64 = 1_800_000_000_000
    func now() -> Instant { Instant(milliseconds: Self.epochMilliseconds + SimClock.now.nanoseconds / 1_000_000) }
}

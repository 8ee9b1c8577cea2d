@_spi(Simulation) @testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real `baton serve` with user alice, for the client's live tests.
func startServer(_ arguments: [String] = []) throws -> ServerProcess {
    let server = try ServerProcess(["--access-log", "off"] + arguments)
    try server.addUser("alice")
    return server
}

/// Baton behind a live nginx running the shipped proxy rules, with the echo application behind
/// `auth_request`. nginx connects from 127.0.0.1, Baton's trusted proxy.
struct GatewayFixture {
    let baton: ServerProcess
    let app: EchoApplication
    let nginx: NginxProcess

    /// Starts all three; `arguments` are extra `baton serve` flags.
    init(_ arguments: [String] = []) throws {
        let reservation = try PortReservation()
        try self.init(baton: startServer(Self.batonArguments(reservation) + arguments), reservation: reservation)
    }

    /// Puts the application and nginx in front of a running Baton, on `reservation`'s port when
    /// Baton was started with `batonArguments(reservation)`.
    init(baton: ServerProcess, reservation: PortReservation? = nil) throws {
        self.baton = baton
        app = try EchoApplication()
        nginx = try NginxProcess(batonPorts: [baton.port], appPort: app.port, reservation: reservation)
    }

    /// What Baton needs behind this nginx: trust in 127.0.0.1, and the gateway's public URL
    /// (DPoP proofs name it with its port, which nginx's `$host` drops; docs/deploy.md).
    static func batonArguments(_ reservation: PortReservation) -> [String] {
        ["--trusted-proxy", "127.0.0.1/32", "--public-url", "http://127.0.0.1:\(reservation.port)"]
    }

    /// The gateway's base URL.
    var url: URL { URL(string: "http://127.0.0.1:\(nginx.port)")! }
}

/// Logs alice in on a fresh server issuing 1-second tokens, then replaces that server with one
/// on the same database and key file issuing 15-minute tokens (plus `arguments`), and waits
/// until the login's token has expired there. So the client meets a real expiry (a 401
/// `token_expired`), and the successor it gets outlives any slowness of a loaded machine.
/// The first server comes back too: its deinit removes the shared directory, so keep it.
func serverAfterAShortLivedLogin(into store: any CredentialStore, clock: TestClock,
                                 arguments: [String] = []) async throws -> (server: ServerProcess, first: ServerProcess) {
    let first = try startServer(["--token-ttl", "1s"])
    try await makeSession(first.baseURL, store: store, clock: clock).loginAlice()
    guard let token = try store.load()?.bundle?.token else { throw ServerProcess.ServerError.didNotStart("no login stored") }
    first.stop()
    let server = try ServerProcess(["--access-log", "off"] + arguments, directory: first.directory)
    // Behind the gateway (`--public-url`), a proof names the public URL.
    let origin = arguments.firstIndex(of: "--public-url").map { arguments[$0 + 1] } ?? "http://127.0.0.1"
    try await server.awaitExpiry(of: token, key: try store.deviceKey(creating: false), origin: origin)
    return (server, first)
}

extension ServerProcess {
    /// The server's base URL.
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Committed exchanges so far (`baton_exchanges_total{kind="exchanged"}`; R3a retries apart).
    func exchangeCount(kind: String = "exchanged") throws -> Int {
        try metric("baton_exchanges_total{kind=\"\(kind)\"}")
    }

    /// Verify's 401 answers so far.
    func verifyRejections() throws -> Int {
        try metric("baton_http_requests_total{route=\"/v1/verify\",status=\"401\"}")
    }

    /// One sample of /metrics; 0 when the series has not appeared yet.
    func metric(_ series: String) throws -> Int {
        let text = try request("GET", "/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return 0 }
        guard let value = Int(line.dropFirst(series.count + 1)) else { throw ServerError.didNotStart("unreadable \(line)") }
        return value
    }

    /// The kinds of every audit event, oldest first (`baton admin audit --format json`).
    func auditKinds() throws -> [String] {
        let (status, out, err) = try runBaton(["admin", "audit", "--format", "json", "--limit", "100000", "--db", databasePath])
        guard status == 0 else { throw ServerError.didNotStart("audit failed: \(err)") }
        return out.split(separator: "\n").compactMap { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["kind"] as? String
        }
    }

    /// Verify's answer for `token`, asked directly: 200, or the error code.
    func verifyAnswer(_ token: String, key: DeviceKey?, origin: String = "http://127.0.0.1") throws -> String {
        let response = try request("GET", "/v1/verify", presenting: token, key: key, origin: origin)
        return response.status == 200 ? "ok" : response.error ?? "\(response.status)"
    }

    /// A request presenting `token` as the client does: with `key` (a bound chain's), as
    /// `Authorization: DPoP` with a fresh proof by the key for this request; else as Bearer.
    /// `origin`: the server's idea of its URL (the raw connection sends `Host: 127.0.0.1`;
    /// a server with `--public-url` has that instead).
    func request(_ method: String, _ path: String, presenting token: String, key: DeviceKey?, origin: String = "http://127.0.0.1",
                 headers: [(String, String)] = []) throws -> HTTPConnection.Response {
        guard let key else { return try request(method, path, token: token, headers: headers) }
        let proof = try DeviceProof.make(key: key, method: method, url: URL(string: origin + path)!, token: token,
                                         nonce: nil, now: Date())
        return try request(method, path, headers: [("Authorization", "DPoP " + token), ("DPoP", proof)] + headers)
    }

    /// Waits until the server itself says `token` has expired (time-based, so polled); `key`
    /// proves a bound token's requests.
    func awaitExpiry(of token: String, key: DeviceKey?, origin: String = "http://127.0.0.1", within seconds: Double = 30) async throws {
        let expired = try await eventuallyAsync(within: seconds) { try self.verifyAnswer(token, key: key, origin: origin) == "token_expired" }
        guard expired else { throw ServerError.didNotStart("the token did not expire within \(seconds) s") }
    }
}

/// Polls `condition` without blocking a thread until it holds or the deadline passes.
func eventuallyAsync(within seconds: Double = 60, _ condition: @Sendable () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// A session for tests: no expiry margin (the server's tokens live seconds in some tests), on
/// a clock the test controls.
/// An exchange timeout no answer reaches on a loaded test machine, for tests whose fault is
/// placed by counting the store's calls: an attempt that timed out (the 2 s default, under
/// CI's load) renews its claim before its retry, a read and a save more, and the fault then
/// lands on another call than the one the test means.
let countedCallsExchangeTimeout: Duration = .seconds(60)

func makeSession(_ baseURL: URL, store: any CredentialStore = MemoryCredentialStore(), clock: TestClock = TestClock(),
                 maxConcurrentRequests: Int = 8, exchangeTimeout: Duration = .seconds(2),
                 installationMarker: InstallationMarkerLocation = .none) -> BatonSession {
    var configuration = BatonConfiguration(baseURL: baseURL, appName: "BatonClientTests/1", requestTimeout: 20,
                                           maxConcurrentRequests: maxConcurrentRequests, expiryMargin: 0,
                                           exchangeTimeout: exchangeTimeout, now: clock.now)
    // No marker in the user's home by default; FirstLaunchTests give one a directory of its own.
    configuration.installationMarker = installationMarker
    return BatonSession(configuration: configuration, store: store)
}

/// A session logged in through `relay`, its clock moved past the token's lifetime: its next
/// request exchanges, through the relay's fault.
func sessionDueForAnExchange(through relay: TCPRelay, store: any CredentialStore = MemoryCredentialStore(),
                             exchangeTimeout: Duration = .seconds(2)) async throws -> BatonSession {
    let clock = TestClock()
    let session = makeSession(URL(string: "http://127.0.0.1:\(relay.port)")!, store: store, clock: clock,
                              exchangeTimeout: exchangeTimeout)
    try await session.loginAlice()
    clock.advance(by: pastTheLifetime)
    return session
}

/// The client's clock in a test. `advance(by:)` makes the client see its token expire at once
/// (it then exchanges before sending; the server allows exchanging a live token), without
/// waiting for a real expiry. A frozen clock never sees a token expire: the client learns it
/// from the server's 401 `token_expired`.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    private let frozenAt: Date?

    /// A clock running with real time, or stopped now.
    init(frozen: Bool = false) { frozenAt = frozen ? Date() : nil }

    /// The time the client sees.
    @Sendable func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        return frozenAt ?? Date().addingTimeInterval(offset)
    }

    /// Moves the clock forward.
    func advance(by seconds: TimeInterval) {
        lock.lock()
        offset += seconds
        lock.unlock()
    }
}

/// Past the server's default token lifetime (15 minutes): the held token looks expired.
let pastTheLifetime: TimeInterval = 1000

extension BatonSession {
    /// The token held (tests only: the app never sees it).
    var token: String? { heldBundle?.token }
    /// The held token's generation, -1 when none.
    var generation: Int { heldBundle?.generation ?? -1 }
    /// The held chain.
    var chainID: String? { heldBundle?.chainID }

    /// Logs alice in.
    func loginAlice(deviceClass: DeviceClass = .mobile) async throws {
        try await login(username: "alice", password: "correct horse battery", deviceClass: deviceClass, deviceName: "test phone")
    }

    /// A GET of `path` (relative to the base URL) through the session; the status.
    @discardableResult
    func get(_ path: String) async throws -> Int {
        try await send(URLRequest(url: URL(string: path)!)).1.statusCode
    }
}

/// The events a session published so far, collected in the background.
final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [SessionEvent] = []
    private var task: Task<Void, Never>?

    /// Starts recording `session`'s events: subscribed before `init` returns, so nothing
    /// published after it is missed.
    init(_ session: BatonSession) {
        let stream = session.events
        task = Task { [weak self] in
            for await event in stream {
                guard let self else { return }
                self.append(event)
            }
        }
    }

    private func append(_ event: SessionEvent) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    /// The events recorded so far.
    var events: [SessionEvent] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    deinit { task?.cancel() }
}

/// A temporary directory for one test's files.
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "baton-client-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@_spi(Simulation) @testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The seam a deterministic simulation runs the shipped session through (`ClientEnvironment`):
/// with ids, clocks, sleep and the network of its own, nothing reaches a socket or the real
/// clock on the session's paths, and the transport's logout semantics hold for a simulated
/// round trip too.
@Suite(.ownThreads) struct ClientEnvironmentTests {
    /// A network that answers by path and records what it was sent.
    final class SimulatedNetwork: @unchecked Sendable {
        private let lock = NSLock()
        private var sent: [URLRequest] = []
        private let answer: @Sendable (URLRequest) async -> Result<(Data, HTTPURLResponse), BatonClientError>

        init(answer: @escaping @Sendable (URLRequest) async -> Result<(Data, HTTPURLResponse), BatonClientError>) {
            self.answer = answer
        }

        /// The requests sent so far, in order.
        var requests: [URLRequest] { lock.withLock { sent } }

        func roundTrip(_ request: URLRequest) async -> Result<(Data, HTTPURLResponse), BatonClientError> {
            record(request)
            return await answer(request)
        }

        private func record(_ request: URLRequest) { lock.withLock { sent.append(request) } }

        /// An answer of `status` with a JSON body.
        static func json(_ request: URLRequest, _ status: Int, _ body: String) -> Result<(Data, HTTPURLResponse), BatonClientError> {
            .success((Data(body.utf8), HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1",
                                                        headerFields: ["Content-Type": "application/json"])!))
        }

        /// No answer until the round trip is cancelled (a logout, the caller, a deadline).
        static func never() async -> Result<(Data, HTTPURLResponse), BatonClientError> {
            do { try await Task.sleep(for: .seconds(3600)) } catch {}
            return .failure(.cancelled)
        }
    }

    /// Simulated time: sleeping moves it at once and is recorded.
    final class SimulatedClock: @unchecked Sendable {
        private let lock = NSLock()
        private var elapsed: Duration = .zero
        private var slept: [Duration] = []
        private let base = ContinuousClock.now
        let wallBase = Date(timeIntervalSince1970: 1_800_000_000)
        let uptimeBase = 1000.0

        var sleeps: [Duration] { lock.withLock { slept } }
        func monotonicNow() -> ContinuousClock.Instant { base.advanced(by: lock.withLock { elapsed }) }
        func wallClock() -> Date { wallBase.addingTimeInterval(lock.withLock { elapsed }.seconds) }
        func uptime() -> Double { uptimeBase + lock.withLock { elapsed }.seconds }

        func sleep(_ span: Duration) async throws {
            try Task.checkCancellation()
            advance(by: span)
        }

        private func advance(by span: Duration) {
            lock.withLock {
                elapsed += span
                slept.append(span)
            }
        }
    }

    /// Ids 1, 2, 3, ... in the last group of a UUID.
    final class SimulatedIDs: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        static func id(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n))! }
        func newID() -> UUID { Self.id(lock.withLock { next += 1; return next }) }
    }

    static let configuration: BatonConfiguration = {
        var configuration = BatonConfiguration(baseURL: URL(string: "https://api.example.com")!, appName: "SimTests/1", requestTimeout: 20)
        configuration.deviceBinding = .off
        return configuration
    }()

    static func environment(_ network: SimulatedNetwork, clock: SimulatedClock = SimulatedClock(), ids: SimulatedIDs = SimulatedIDs()) -> ClientEnvironment {
        ClientEnvironment(wallClock: clock.wallClock, uptime: clock.uptime, monotonicNow: clock.monotonicNow, sleep: clock.sleep,
                          newID: ids.newID, randomBytes: { [UInt8](repeating: 7, count: $0) },
                          claimLiveness: ClaimOwnerLiveness(current: ClaimOwner(pid: 1, processName: "sim", launch: "launch-1"),
                                                            isSessionAlive: { _ in true }, isProcessRunning: { _ in true },
                                                            launchesAreExclusive: false),
                          network: .roundTrip(network.roundTrip))
    }

    static let loginAnswer = #"{"token":"bt1_a","expires_in":600,"chain_id":"c1","generation":0}"#

    @Test func theSessionAndDeviceIDsAndEveryRequestGoThroughTheEnvironment() async throws {
        let network = SimulatedNetwork { request in
            request.url?.path == "/v1/login" ? SimulatedNetwork.json(request, 200, Self.loginAnswer) : SimulatedNetwork.json(request, 200, "{}")
        }
        let session = BatonSession(configuration: Self.configuration, store: MemoryCredentialStore(), environment: Self.environment(network))
        #expect(session.sessionID == SimulatedIDs.id(1).uuidString)
        try await session.login(username: "alice", password: "correct horse battery")
        let (_, response) = try await session.send(URLRequest(url: URL(string: "/api/orders")!))
        #expect(response.statusCode == 200)
        let sent = network.requests
        #expect(sent.map { "\($0.httpMethod ?? "GET") \($0.url?.absoluteString ?? "")" }
            == ["POST https://api.example.com/v1/login", "GET https://api.example.com/api/orders"])
        #expect(sent.last?.value(forHTTPHeaderField: "X-Device-Id") == SimulatedIDs.id(2).uuidString.lowercased())
        #expect(sent.last?.value(forHTTPHeaderField: "Authorization") == "Bearer bt1_a")
    }

    @Test func aLogoutCancelsASimulatedAppRequestInFlight() async throws {
        let network = SimulatedNetwork { request in
            switch request.url?.path {
            case "/v1/login": return SimulatedNetwork.json(request, 200, Self.loginAnswer)
            case "/v1/logout": return .success((Data(), HTTPURLResponse(url: request.url!, statusCode: 204, httpVersion: nil, headerFields: nil)!))
            default: return await SimulatedNetwork.never()
            }
        }
        let session = BatonSession(configuration: Self.configuration, store: MemoryCredentialStore(), environment: Self.environment(network))
        try await session.login(username: "alice", password: "correct horse battery")
        let slow = Task { try await session.send(URLRequest(url: URL(string: "/api/slow")!)) }
        for _ in 0..<500 where !network.requests.contains(where: { $0.url?.path == "/api/slow" }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await session.logout())
        await #expect(throws: BatonClientError.cancelled) { try await slow.value }
    }

    @Test func anExchangeRunsOnSimulatedTimeAndStampsItsClaimWithTheEnvironmentsClocks() async throws {
        let network = SimulatedNetwork { _ in await SimulatedNetwork.never() }
        let clock = SimulatedClock()
        let expired = TokenBundle(token: "bt1_old", expiresAt: Date().addingTimeInterval(-60), chainID: "c1", generation: 0)
        let store = MemoryCredentialStore(StoredCredentials(deviceID: "phone-1", bundle: expired))
        let session = BatonSession(configuration: Self.configuration, store: store,
                                   environment: Self.environment(network, clock: clock))
        let started = ContinuousClock.now
        var failure: BatonClientError?
        do { _ = try await session.validToken() } catch { failure = error }
        guard case .transport(let code, _)? = failure else {
            Issue.record("not a transport failure: \(String(describing: failure))")
            return
        }
        #expect(code == URLError.timedOut.rawValue)
        // Three attempts' deadlines and the two pauses between them, on simulated time only.
        #expect(clock.sleeps == [.seconds(2), .milliseconds(250), .seconds(2), .milliseconds(500), .seconds(20)])
        // On real time those deadlines and pauses alone would take 24.75 s. Alone this test takes
        // milliseconds; in the full suite, waiting for a thread of the shared pool, up to 17.5 s
        // was seen, so the bound is the schedule itself, not a guess at the machine's load.
        #expect(ContinuousClock.now - started < .milliseconds(24_750))
        let claim = try #require(try store.load()?.claim)
        #expect(claim.owner == session.sessionID && claim.lease == 0)
        #expect(claim.ownerProcess == ClaimOwner(pid: 1, processName: "sim", launch: "launch-1"))
        #expect(claim.startedAt == clock.wallBase.addingTimeInterval(4.75))
        #expect(claim.renewedAtUptime == clock.uptimeBase + 4.75 && claim.firstClaimedAtUptime == clock.uptimeBase)
    }
}

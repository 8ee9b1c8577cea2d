@_spi(Simulation) @testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Issue 42: the optional biometric gate on token use, against a real server. The system
/// prompt is Apple's (`LAContext`); here a gate of the test's answers in its place, and the
/// platform gate itself on Linux, which refuses (there is nothing to ask).
@Suite(.ownThreads) struct BiometricGateTests {
    /// The answers a test gives, and how often it was asked.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var queue: [BiometricOutcome]
        private(set) var asked = 0
        init(_ answers: [BiometricOutcome]) { queue = answers }
        func next() async -> BiometricOutcome {
            try? await Task.sleep(for: .milliseconds(100))  // a prompt takes the user a moment: requests pile up
            return lock.withLock {
                asked += 1
                return queue.isEmpty ? .confirmed : queue.removeFirst()
            }
        }
        var count: Int { lock.withLock { asked } }
    }

    static func session(_ server: ServerProcess, store: any CredentialStore, gate: BiometricGate?) -> BatonSession {
        var configuration = BatonConfiguration(baseURL: server.baseURL, appName: "BatonClientTests/1", requestTimeout: 20, expiryMargin: 0)
        configuration.installationMarker = .none
        configuration.biometrics = gate
        return BatonSession(configuration: configuration, store: store)
    }

    @Test func aCancelledPromptSendsNothingAndLogsNobodyOut() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        try await makeSession(server.baseURL, store: store).loginAlice()
        let answers = Answers([.cancelled])
        let gate = BiometricGate(reason: "Confirm to see your accounts", validFor: .seconds(300), allowsPasscode: true,
                                 evaluate: { _ in await answers.next() })
        let session = Self.session(server, store: store, gate: gate)
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        guard case .userAuthentication(let why) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(why.contains("cancelled"))
        guard case .loggedIn = await session.status else { Issue.record("\(await session.status)"); return }
        #expect(try queryDatabase("SELECT count(*) FROM chains WHERE head_presented = 1 OR revoked_at IS NOT NULL", at: server.databasePath) == [["0"]],
                "the token was used or the chain ended")
        // Confirmed: requests go, five at once on one prompt, and none asks again within validFor.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await session.get("/v1/verify") } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200, 200, 200])
        #expect(try await session.get("/v1/verify") == 200)
        #expect(answers.count == 2, "asked \(answers.count) times")
        // authorize(_:) for the app's own transport asks too (here: already confirmed).
        _ = try await session.authorize(URLRequest(url: server.baseURL.appendingPathComponent("api/x")))
        #expect(answers.count == 2)
    }

    @Test func aGateThatExpiredAsksAgain() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        try await makeSession(server.baseURL, store: store).loginAlice()
        let answers = Answers([])
        let gate = BiometricGate(reason: "Confirm", validFor: .zero, allowsPasscode: false, evaluate: { _ in await answers.next() })
        let session = Self.session(server, store: store, gate: gate)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(answers.count == 2)
    }

    /// A store whose device key refuses to sign while `refusing` (as a Secure Enclave key under
    /// `DeviceKeyProtection.biometry` answers a cancelled Face ID prompt).
    final class ConfirmingKeyStore: CredentialStore, @unchecked Sendable {
        let inner = MemoryCredentialStore()
        private let lock = NSLock()
        private var refusing = false
        func refuse(_ value: Bool) { lock.withLock { refusing = value } }
        func load() throws(BatonClientError) -> StoredCredentials? { try inner.load() }
        func save(_ credentials: StoredCredentials) throws(BatonClientError) { try inner.save(credentials) }
        func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
        func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
            guard let key = try inner.deviceKey(creating: creating) else { return nil }
            return DeviceKey(x: key.x, y: key.y) { [self] message throws(BatonClientError) in
                if lock.withLock({ refusing }) { throw .userAuthentication("the Secure Enclave key needs Face ID, not given") }
                return try key.sign(message)
            }
        }
    }

    /// The hardware gate (`DeviceKeyProtection.biometry`): a signature the user did not confirm
    /// fails the request with `.userAuthentication` and ends nothing (a broken key would end the
    /// bound session, F11; a cancelled Face ID must not).
    @Test func anUnconfirmedSignatureEndsNothing() async throws {
        let server = try startServer()
        let store = ConfirmingKeyStore()
        let session = makeSession(server.baseURL, store: store)
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        store.refuse(true)
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        guard case .userAuthentication = error else { Issue.record("\(String(describing: error))"); return }
        guard case .loggedIn = await session.status else { Issue.record("\(await session.status)"); return }
        store.refuse(false)
        #expect(try await session.get("/v1/verify") == 200)
    }

    /// On Linux there is no biometric hardware: a configured gate refuses, it never skips.
    @Test func thePlatformGateOnLinuxRefusesEveryRequest() async throws {
        #if !canImport(LocalAuthentication)
        let server = try startServer()
        let store = MemoryCredentialStore()
        try await makeSession(server.baseURL, store: store).loginAlice()
        let session = Self.session(server, store: store, gate: BiometricGate(reason: "Confirm"))
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        guard case .userAuthentication(let why) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(why.contains("Apple platforms only"))
        guard case .loggedIn = await session.status else { Issue.record("\(await session.status)"); return }
        #endif
    }
}

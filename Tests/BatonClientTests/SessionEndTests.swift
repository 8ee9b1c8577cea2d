@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// The server's final answers end the session: cleared store, `loginRequired(reason)`, an event.
@Suite(.ownThreads) struct SessionEndTests {
    @Test func stolenBundleExchangedFirstEndsBothSessions() async throws {
        let server = try startServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let victimStore = FileCredentialStore(path: directory + "/victim.json")
        let victimClock = TestClock(), attackerClock = TestClock()
        let victim = makeSession(server.baseURL, store: victimStore, clock: victimClock)
        let victimEvents = EventRecorder(victim)
        try await victim.loginAlice()
        // The attacker copies the stored bundle (and the device id with it), and the device key
        // file: with the key and the token, reuse detection is what catches the theft.
        try FileManager.default.copyItem(atPath: victimStore.path, toPath: directory + "/attacker.json")
        try FileManager.default.copyItem(atPath: victimStore.path + ".dpop-key", toPath: directory + "/attacker.json.dpop-key")
        let key = try victimStore.deviceKey(creating: false)
        let attacker = makeSession(server.baseURL, store: FileCredentialStore(path: directory + "/attacker.json"), clock: attackerClock)
        let attackerEvents = EventRecorder(attacker)
        let stolen = try #require(await victim.token)
        victimClock.advance(by: pastTheLifetime)
        attackerClock.advance(by: pastTheLifetime)

        #expect(try await attacker.get("/v1/verify") == 200)  // exchanges first, and uses its token
        let attackersToken = try #require(await attacker.token)
        let victimError = await #expect(throws: BatonClientError.self) { try await victim.get("/v1/verify") }
        #expect(victimError == .loginRequired(.tokenReused))
        let attackerError = await #expect(throws: BatonClientError.self) { try await attacker.get("/v1/verify") }
        #expect(attackerError == .loginRequired(.revoked(.reuseDetected)))

        for token in [stolen, attackersToken] { #expect(try server.verifyAnswer(token, key: key) == "chain_revoked") }
        #expect(try victimStore.load()?.bundle == nil)
        #expect(await victim.status == .loggedOut(.tokenReused))
        #expect(await eventuallyAsync { victimEvents.events.contains(.loginRequired(.tokenReused)) })
        #expect(await eventuallyAsync { attackerEvents.events.contains(.loginRequired(.revoked(.reuseDetected))) })
        #expect(try server.auditKinds().contains("reuse_detected"))
    }

    @Test func secondLoginOfTheSameDeviceClassLogsTheFirstOut() async throws {
        let server = try startServer(["--one-chain-per-device-class"])
        let first = makeSession(server.baseURL), second = makeSession(server.baseURL)
        let firstEvents = EventRecorder(first)
        try await first.loginAlice(deviceClass: .mobile)
        #expect(try await first.get("/v1/verify") == 200)
        try await second.loginAlice(deviceClass: .mobile)
        let error = await #expect(throws: BatonClientError.self) { try await first.get("/v1/verify") }
        #expect(error == .loginRequired(.revoked(.loggedInElsewhere)))
        #expect(await eventuallyAsync { firstEvents.events == [.loggedIn, .loginRequired(.revoked(.loggedInElsewhere))] })
        // Later requests fail at once with the same reason; the other device goes on.
        let again = await #expect(throws: BatonClientError.self) { try await first.get("/v1/verify") }
        #expect(again == .loginRequired(.revoked(.loggedInElsewhere)))
        #expect(try await second.get("/v1/verify") == 200)
    }

    @Test func logoutRevokesTheChainClearsTheStoreAndKeepsTheDeviceID() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let session = makeSession(server.baseURL, store: store)
        let events = EventRecorder(session)
        try await session.loginAlice()
        let token = try #require(await session.token)
        let deviceID = try #require(try store.load()?.deviceID)
        #expect(await session.logout())
        #expect(try server.verifyAnswer(token, key: store.deviceKey(creating: false)) == "chain_revoked")
        #expect(try store.load() == StoredCredentials(deviceID: deviceID, bundle: nil))
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        #expect(error == .loginRequired(.loggedOut))
        #expect(await eventuallyAsync { events.events == [.loggedIn, .loggedOut] })
        try await session.loginAlice()  // the same device logs in again
        #expect(try store.load()?.deviceID == deviceID)
        #expect(try await session.get("/v1/verify") == 200)
    }

    /// Issue 29, M3: `events` is a stream per subscriber. A view model and a logger both
    /// listening used to share one `AsyncStream`, and the second `for await` on it is a
    /// runtime trap; now each gets every event.
    @Test func twoListenersEachGetEveryEvent() async throws {
        let server = try startServer()
        let session = makeSession(server.baseURL)
        let first = EventRecorder(session)
        let second = EventRecorder(session)
        try await session.loginAlice()
        #expect(await session.logout())
        #expect(await eventuallyAsync { first.events == [.loggedIn, .loggedOut] })
        #expect(await eventuallyAsync { second.events == [.loggedIn, .loggedOut] })
    }

    @Test func wrongPasswordIsAnHTTPErrorWithTheServersCode() async throws {
        let server = try startServer()
        let session = makeSession(server.baseURL)
        let error = await #expect(throws: BatonClientError.self) {
            try await session.login(username: "alice", password: "wrong", deviceClass: .mobile)
        }
        guard case .http(401, let serverError, _, _) = error else {
            Issue.record("expected HTTP 401, got \(String(describing: error))")
            return
        }
        #expect(serverError?.code == "invalid_credentials")
        #expect(await session.status == .loggedOut(.notLoggedIn))
    }

    @Test func requestsWithoutALoginFailWithLoginRequired() async throws {
        let session = makeSession(URL(string: "http://127.0.0.1:9")!)
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        #expect(error == .loginRequired(.notLoggedIn))
    }

    @Test func restoreWithExchangeNowSharesTheExchangeWithTheFirstRequests() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        try await makeSession(server.baseURL, store: store).loginAlice()
        let session = makeSession(server.baseURL, store: store)  // the next launch
        let before = try server.exchangeCount()
        async let restored = session.restore(exchangeNow: true)
        async let first = session.get("/v1/verify")
        async let second = session.get("/v1/verify")
        #expect(try await [first, second] == [200, 200])
        guard case .loggedIn(_, 1) = await restored else {
            Issue.record("restore did not exchange")
            return
        }
        #expect(try server.exchangeCount() - before == 1)
    }
}

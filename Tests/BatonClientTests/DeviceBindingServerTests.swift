@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The client's device binding against the real `baton serve` (issue 19): the login binds,
/// every call is proved, nonces are fetched when needed, a copy of the token without the key
/// is refused, and a lost exchange answer on a bound chain recovers after the device was away
/// longer than the retry grace.
@Suite(.ownThreads) struct DeviceBindingServerTests {
    @Test func loginBindsAndEveryCallIsProvedWithTheStoresKey() async throws {
        let server = try startServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FileCredentialStore(path: directory + "/credentials.json")
        let clock = TestClock()
        let session = makeSession(server.baseURL, store: store, clock: clock)
        try await session.loginAlice()
        let login = try #require(await session.heldBundle)
        let key = try #require(try store.deviceKey(creating: false))
        #expect(login.tokenType == .dpop)
        #expect(login.keyThumbprint == key.thumbprint)
        #expect(try store.load()?.bundle?.tokenType == .dpop, "the type is stored with the bundle")

        #expect(try await session.get("/v1/verify") == 200)
        clock.advance(by: pastTheLifetime)  // exchanges first; its proofs' iat is now far ahead: a nonce round trip
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 1)
        #expect(await session.heldBundle?.tokenType == .dpop)
        let sessions = try await session.sessions()
        #expect(sessions.count == 1 && sessions[0].isCurrent && sessions[0].isBound)
        _ = try await session.confirm(password: "correct horse battery")
        #expect(await session.logout())
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("proof_failed"), "\(kinds)")
        #expect(kinds.contains("chain_revoked"), "\(kinds)")

        // The next login on this store proves the same key: the key is the device.
        try await session.loginAlice()
        #expect(await session.heldBundle?.keyThumbprint == key.thumbprint)
    }

    @Test func aCopyOfTheBundleWithoutTheKeyIsRefusedAndTheDeviceGoesOn() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let session = makeSession(server.baseURL, store: store)
        try await session.loginAlice()
        let copy = try #require(try store.load()?.bundle)
        for (method, path, scheme) in [("GET", "v1/verify", "DPoP"), ("GET", "v1/verify", "Bearer"), ("POST", "v1/exchange", "DPoP"),
                                       ("POST", "v1/logout", "DPoP")] {
            var request = URLRequest(url: server.baseURL.appendingPathComponent(path))
            request.httpMethod = method
            request.setValue("\(scheme) \(copy.token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode
            #expect(status == 401 && String(decoding: data, as: UTF8.self).contains("invalid_dpop_proof"), "\(method) \(path) \(scheme)")
        }
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 0)
        #expect(try eventually { try server.auditKinds().contains("proof_failed") })  // written off the request path
    }

    @Test(arguments: [["--dpop-nonce", "always"], ["--dpop-nonce", "when-clock-off"]])
    func nonceChallengesAreAnsweredTransparently(flags: [String]) async throws {
        let server = try startServer(flags)
        // A device clock two hours ahead: every proof's iat is off.
        let clock = TestClock()
        clock.advance(by: 7200)
        let session = makeSession(server.baseURL, clock: clock)
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        #expect(try await session.get("/v1/verify") == 200)
        clock.advance(by: pastTheLifetime)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 1)
        #expect(await session.logout())
    }

    /// The lost answer the unbound chain cannot survive: the exchange committed, its answers
    /// stalled past every attempt, and the device away longer than the retry grace. Bound, the
    /// retry is the key holder's and the server takes it; unbound (the control), it is reuse.
    /// The token expires for real (no clock moved: every proof's iat is right, so no nonce
    /// round trip meets the relay's fault).
    /// A network that duplicates exchange requests: each copy reaches the server first, so the
    /// request itself is refused as a replayed proof (`jti_replayed`), and so is the transport's
    /// resend with a fresh proof when the copy hits it too. The refusal changes nothing, so the
    /// exchange goes on with the schedule's next attempt (a fresh proof: the key's retry) and the
    /// app's request succeeds. Before, the second refusal failed the app's request with 401
    /// `invalid_dpop_proof` (the false-logout benchmark's duplicate-request and drop-answer rows).
    @Test func anExchangeWhoseProofsAreRefusedAsReplayedGoesOnWithTheNextAttempt() async throws {
        let server = try startServer(["--token-ttl", "2s", "--dpop-audit-window", "0"])  // one proof_failed per refusal
        let relay = try TCPRelay(to: server.port, fault: .duplicateAhead, faultyAnswers: 2)
        defer { relay.close() }
        let session = BatonSession(configuration: BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(relay.port)")!,
                                                                     appName: "BatonClientTests/1", requestTimeout: 20, expiryMargin: 0),
                                   store: MemoryCredentialStore())
        let events = EventRecorder(session)
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        let expiry = try #require(await session.heldBundle?.expiresAt)
        #expect(await eventuallyAsync(within: 30) { Date() > expiry })

        #expect(try await session.get("/v1/verify") == 200)
        #expect(relay.faultedAnswers == 2)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try eventually { try server.auditKinds().filter { $0 == "proof_failed" }.count == 2 })  // written off the request path
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("fork_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
        #expect(!events.events.contains { if case .loginRequired = $0 { true } else { false } })
    }

    @Test(arguments: [BatonConfiguration.DeviceBinding.on, .off])
    func aLostExchangeAnswerIsRecoveredAfterBeingAwayLongerThanTheGrace(binding: BatonConfiguration.DeviceBinding) async throws {
        let server = try startServer(["--retry-grace", "1s", "--token-ttl", "2s"])
        let attempts = binding == .on ? 3 : 1  // bound: the schedule is not cut to the 1-s grace
        let relay = try TCPRelay(to: server.port, fault: .stall, faultyAnswers: attempts)
        defer { relay.close() }
        var configuration = BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(relay.port)")!, appName: "BatonClientTests/1",
                                               requestTimeout: 20, expiryMargin: 0, serverRetryGrace: .seconds(1))
        configuration.deviceBinding = binding
        let session = BatonSession(configuration: configuration, store: MemoryCredentialStore())
        let events = EventRecorder(session)
        try await session.loginAlice()
        // The token's own expiry (a bound token cannot be asked about without a proof).
        let expiry = try #require(await session.heldBundle?.expiresAt)
        #expect(await eventuallyAsync(within: 30) { Date() > expiry })
        await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        #expect(relay.faultedAnswers == attempts)
        #expect(await session.generation == 0, "no answer reached the client")
        // The device is away (suspended) past the grace; this wait is the fault, not a synchronisation.
        try await Task.sleep(for: .seconds(2))
        if binding == .on {
            #expect(try await session.get("/v1/verify") == 200)
            #expect(await session.generation == 1)
            let kinds = try server.auditKinds()
            #expect(kinds.contains("exchange_retried"), "\(kinds)")
            #expect(!kinds.contains("reuse_detected") && !kinds.contains("fork_detected"), "\(kinds)")
            #expect(!events.events.contains { if case .loginRequired = $0 { true } else { false } })
        } else {
            await #expect(throws: BatonClientError.loginRequired(.tokenReused)) { try await session.get("/v1/verify") }
        }
    }
}

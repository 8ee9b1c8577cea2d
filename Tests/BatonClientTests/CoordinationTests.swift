@_spi(Simulation) @testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Sessions sharing a store (an app and its extension; two processes on one file) take turns
/// without holding the store's lock across the network (issue 18, defects 5 and 8).
@Suite(.ownThreads) final class CoordinationTests: Sendable {
    let directory: String
    let path: String

    init() throws {
        directory = try temporaryDirectory()
        path = directory + "/credentials.json"
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @Test func storeLockIsFreeWhileAnExchangeIsStalledAndItsClaimIsStored() async throws {
        let server = try startServer()
        let relay = try TCPRelay(to: server.port, fault: .stall, faultyAnswers: 2)  // in flight for 4.25 s at least
        defer { relay.close() }
        let session = try await sessionDueForAnExchange(through: relay, store: FileCredentialStore(path: path))
        let request = Task { try await session.get("/v1/verify") }
        #expect(await eventuallyAsync { relay.faultedAnswers == 1 })  // the exchange is out, its answer held

        // Taken at all (the lock's own wait is bounded, 10 s, then an error), and with the claim
        // of the exchange still in it: taken while the exchange was in flight. No clock compared.
        let lock = try await FileCredentialStore(path: path).lock()
        let claim = try FileCredentialStore(path: path).load()?.claim
        lock.unlock()
        #expect(await session.pendingExchange != nil, "the exchange was still in flight")
        #expect(claim?.owner == session.sessionID && claim?.generation == 0)
        #expect(try await request.value == 200)
        #expect(try FileCredentialStore(path: path).load()?.claim == nil)
        #expect(try FileCredentialStore(path: path).load()?.bundle?.generation == 1)
    }

    @Test func staleClaimOfADeadSessionIsTakenOver() async throws {
        let server = try startServer()
        let clock = TestClock()
        try await makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: clock).loginAlice()
        var stored = try #require(try FileCredentialStore(path: path).load())
        stored.claim = ExchangeClaim(owner: "a process killed mid-exchange", chainID: stored.bundle!.chainID, generation: 0,
                                     startedAt: Date().addingTimeInterval(-60), lease: 8)
        try FileCredentialStore(path: path).save(stored)

        let session = makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: clock)
        clock.advance(by: pastTheLifetime)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 1)
        #expect(try server.exchangeCount() == 1)
    }

    @Test func liveClaimOfAnotherSessionIsWaitedForAndItsSuccessorAdopted() async throws {
        let server = try startServer()
        let clock = TestClock()
        try await makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: clock).loginAlice()
        var stored = try #require(try FileCredentialStore(path: path).load())
        let head = try #require(stored.bundle)
        stored.claim = ExchangeClaim(owner: "the app extension", chainID: head.chainID, generation: 0, startedAt: Date(), lease: 30)
        try FileCredentialStore(path: path).save(stored)

        let session = makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: clock)
        clock.advance(by: pastTheLifetime)
        let request = Task { try await session.get("/v1/verify") }
        #expect(await eventuallyAsync { await session.pendingExchange != nil })
        // The extension's exchange, done here: it gets the successor and stores it.
        let key = try FileCredentialStore(path: path).deviceKey(creating: false)
        let answer = try server.request("POST", "/v1/exchange", presenting: head.token, key: key, headers: [("X-Device-Id", stored.deviceID)])
        #expect(answer.status == 200)
        let successor = try TokenBundle.decode(Data(answer.body), receivedAt: Date(), key: key)
        let store = FileCredentialStore(path: path)
        let lock = try await store.lock()
        try store.save(StoredCredentials(deviceID: stored.deviceID, bundle: successor))
        lock.unlock()

        #expect(try await request.value == 200)
        #expect(await session.token == successor.token)
        #expect(try server.exchangeCount() == 1)
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }

    /// Defect 8: a process that logs out after another exchanged revokes the chain's newest
    /// token (the store's), not its own superseded one, so the next launch finds nothing.
    @Test func logoutAfterAnotherSessionExchangedRevokesTheChainsHead() async throws {
        let server = try startServer()
        let clock = TestClock()
        let app = makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: clock)
        try await app.loginAlice()
        let fresh = TestClock()
        let extensionSession = makeSession(server.baseURL, store: FileCredentialStore(path: path), clock: fresh)
        #expect(await extensionSession.restore() == .loggedIn(chainID: try #require(await app.chainID), generation: 0))
        clock.advance(by: pastTheLifetime)
        #expect(try await app.get("/v1/verify") == 200)  // the app exchanged; the extension holds generation 0
        let head = try #require(await app.token)

        #expect(await extensionSession.logout())
        #expect(try server.verifyAnswer(head, key: FileCredentialStore(path: path).deviceKey(creating: false)) == "chain_revoked")
        #expect(try FileCredentialStore(path: path).load()?.bundle == nil)
    }
}

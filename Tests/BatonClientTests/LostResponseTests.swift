@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// R3a from the client's side: the answer to an exchange is lost after the server committed it.
@Suite(.ownThreads) struct LostResponseTests {
    @Test func lostExchangeAnswerIsRetriedWithTheSameTokenAndTheSessionStaysLoggedIn() async throws {
        // A generous grace window: this test is about the client retrying with the same token,
        // not about how fast a loaded machine gets the retry out (Rules tests cover the window).
        // A generous exchange timeout too: the test counts one retry, and on a loaded CI machine
        // the retry's own answer once took longer than the default 2 s, so the client (rightly)
        // sent a third attempt and the server counted two retries.
        let server = try startServer(["--retry-grace", "5m"])
        let relay = try TCPRelay(to: server.port)
        defer { relay.close() }
        let session = try await sessionDueForAnExchange(through: relay, exchangeTimeout: .seconds(15))
        let events = EventRecorder(session)

        #expect(try await session.get("/v1/verify") == 200)
        #expect(relay.hasDroppedAnExchangeAnswer)
        #expect(await session.generation == 1)
        #expect(try await session.get("/v1/verify") == 200)
        let kinds = try server.auditKinds()
        #expect(kinds.contains("exchange_retried"), "\(kinds)")
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("fork_detected"), "\(kinds)")
        #expect(try server.exchangeCount(kind: "retried") == 1)
        #expect(!events.events.contains { if case .loginRequired = $0 { true } else { false } })
    }

    @Test func unreachableServerKeepsTheBundleAndFailsWithATransportError() async throws {
        let server = try startServer()
        let relay = try TCPRelay(to: server.port)
        let store = MemoryCredentialStore()
        let clock = TestClock()
        let configuration = BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(relay.port)")!, requestTimeout: 20,
                                               expiryMargin: 0, exchangeAttempts: 2, exchangeRetryDelay: .milliseconds(50), now: clock.now)
        let session = BatonSession(configuration: configuration, store: store)
        try await session.loginAlice()
        let token = try #require(await session.token)
        clock.advance(by: pastTheLifetime)
        relay.close()  // the network is gone
        for _ in 0..<2 {
            let error = await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
            guard case .transport = error else {
                Issue.record("expected a transport error, not \(String(describing: error))")
                return
            }
        }
        #expect(await session.token == token)  // still logged in, same token for the next try
        #expect(try store.load()?.bundle?.token == token)
    }
}

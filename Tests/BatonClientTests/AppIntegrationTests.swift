@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// For apps with networking of their own (issue 18, "fit into apps"): the app's URLSession,
/// tokens for the app's own transport, and a status stream for the UI.
@Suite(.ownThreads, .timeLimit(.minutes(1))) struct AppIntegrationTests {
    @Test func requestsGoThroughTheAppsOwnURLSession() async throws {
        let echo = try EchoApplication()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Baton-Test-Session": "the app's own"]
        let own = URLSession(configuration: configuration)
        let bundle = TokenBundle(token: "bt1_" + String(repeating: "o", count: 40), expiresAt: Date().addingTimeInterval(3600), lifetime: 3600)
        let session = BatonSession(configuration: BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(echo.port)")!),
                                   store: MemoryCredentialStore(StoredCredentials(deviceID: "d1", bundle: bundle)), urlSession: own)
        let (data, _) = try await session.send(URLRequest(url: URL(string: "/api/x")!))
        let headers = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(headers["x-baton-test-session"] == "the app's own")
        #expect(headers["authorization"] == "Bearer " + bundle.token)
    }

    /// The app sends with its own URLSession; the session authorizes and decides after a 401
    /// `token_expired`: one exchange, then the retry passes.
    @Test func ownTransportAuthorizesAndRecoversFromAnExpiredToken() async throws {
        let store = MemoryCredentialStore(), clock = TestClock(frozen: true)
        let (server, first) = try await serverAfterAShortLivedLogin(into: store, clock: clock)
        defer { withExtendedLifetime(first) {} }
        let session = makeSession(server.baseURL, store: store, clock: clock)
        let appSession = URLSession(configuration: .ephemeral)
        let request = URLRequest(url: server.baseURL.appendingPathComponent("v1/verify"))

        let authorized = try await session.authorize(request)
        let (data, response) = try await appSession.data(for: authorized)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 401)
        #expect(await session.handleUnauthorized(response: http, data: data, for: authorized) == .retry)
        let again = try await session.authorize(request)
        #expect(again.value(forHTTPHeaderField: "Authorization") != authorized.value(forHTTPHeaderField: "Authorization"))
        let (_, retried) = try await appSession.data(for: again)
        #expect((retried as? HTTPURLResponse)?.statusCode == 200)
        #expect(try server.exchangeCount() == 1)
        // Another origin gets nothing.
        let elsewhere = try await session.authorize(URLRequest(url: URL(string: "https://cdn.example.com/file")!))
        #expect(elsewhere.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func everyStatusSubscriberGetsTheCurrentValueFirstThenEachChange() async throws {
        let server = try startServer()
        let clock = TestClock()
        let session = makeSession(server.baseURL, clock: clock)
        let first = await session.statusUpdates()
        let second = await session.statusUpdates()
        var firstIterator = first.makeAsyncIterator(), secondIterator = second.makeAsyncIterator()
        #expect(await firstIterator.next() == .loggedOut(.notLoggedIn))
        #expect(await secondIterator.next() == .loggedOut(.notLoggedIn))
        try await session.loginAlice()
        let chain = try #require(await session.chainID)
        #expect(await firstIterator.next() == .loggedIn(chainID: chain, generation: 0))
        #expect(await secondIterator.next() == .loggedIn(chainID: chain, generation: 0))
        clock.advance(by: pastTheLifetime)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await firstIterator.next() == .loggedIn(chainID: chain, generation: 1))
        // A late subscriber starts with the present.
        var late = await session.statusUpdates().makeAsyncIterator()
        #expect(await late.next() == .loggedIn(chainID: chain, generation: 1))
        await session.logout()
        // A subscriber that fell behind gets the newest status, not the history.
        #expect(await secondIterator.next() == .loggedOut(.loggedOut))
        #expect(await firstIterator.next() == .loggedOut(.loggedOut))
    }
}

@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The network layer's bounds: concurrent requests and the per-request timeout.
@Suite(.ownThreads) struct TransportBoundsTests {
    @Test func requestsBeyondTheBoundWaitAndLogoutCancelsThemAll() async throws {
        let server = try startServer()
        let silent = try SilentListener()
        defer { silent.stop() }
        let session = makeSession(server.baseURL, maxConcurrentRequests: 2)
        try await session.loginAlice()
        let requests = (0..<6).map { index in
            Task { try await session.send(URLRequest(url: URL(string: "http://127.0.0.1:\(silent.port)/api/\(index)")!)) }
        }
        #expect(await eventuallyAsync { silent.acceptedConnections == 2 })
        try await Task.sleep(for: .milliseconds(300))  // a negative check: nothing to await
        #expect(silent.acceptedConnections == 2)
        await session.logout()
        for request in requests {
            let error = await #expect(throws: BatonClientError.self) { try await request.value }
            #expect(error == .cancelled)
        }
        #expect(silent.acceptedConnections == 2)  // the queued four never went out
    }

    @Test func aRequestWithoutAnAnswerTimesOut() async throws {
        let server = try startServer()
        let silent = try SilentListener()
        defer { silent.stop() }
        // Log in with the usual timeout (argon2 on a loaded machine can take over a second), then
        // hand the stored login to a session whose requests time out after 1 s.
        let store = MemoryCredentialStore()
        try await makeSession(server.baseURL, store: store).loginAlice()
        let session = BatonSession(configuration: BatonConfiguration(baseURL: server.baseURL, requestTimeout: 1, expiryMargin: 0),
                                   store: store)
        #expect(await session.restore() != .loggedOut(.notLoggedIn))
        let started = Date()
        let error = await #expect(throws: BatonClientError.self) {
            try await session.send(URLRequest(url: URL(string: "http://127.0.0.1:\(silent.port)/api/slow")!))
        }
        guard case .transport = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return
        }
        #expect(Date().timeIntervalSince(started) < 30)  // URLSession's own default would be 60 s
        #expect(await session.status != .loggedOut(.notLoggedIn))
    }

    @Test func logoutCancelsTheAppsRequestsInFlight() async throws {
        let server = try startServer()
        let silent = try SilentListener()  // accepts connections, never answers
        defer { silent.stop() }
        let session = makeSession(server.baseURL)
        try await session.loginAlice()
        let started = Date()
        let hanging = Task { try await session.send(URLRequest(url: URL(string: "http://127.0.0.1:\(silent.port)/api/slow")!)) }
        #expect(await eventuallyAsync { silent.acceptedConnections > 0 })
        #expect(await session.logout())
        let error = await #expect(throws: BatonClientError.self) { try await hanging.value }
        #expect(error == .cancelled)
        #expect(Date().timeIntervalSince(started) < 15)  // before the 20 s request timeout
    }
}

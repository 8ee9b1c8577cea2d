@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Issue 18, item 12: the smaller ways the client let apps down.
@Suite(.ownThreads, .timeLimit(.minutes(1))) struct SmallerFixesTests {
    @Test func loggedOutSessionTakesUpALoginMadeByAnotherSessionOnTheStore() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let extensionSession = makeSession(server.baseURL, store: store)
        #expect(await extensionSession.restore() == .loggedOut(.notLoggedIn))
        try await makeSession(server.baseURL, store: store).loginAlice()  // the app logs in
        #expect(try await extensionSession.get("/v1/verify") == 200)
    }

    @Test func streamedBodyThatCannotBeReplayedSaysSo() async throws {
        let store = MemoryCredentialStore(), clock = TestClock(frozen: true)
        let reservation = try PortReservation()
        let (server, first) = try await serverAfterAShortLivedLogin(into: store, clock: clock, arguments: GatewayFixture.batonArguments(reservation))
        defer { withExtendedLifetime(first) {} }
        let gateway = try GatewayFixture(baton: server, reservation: reservation)  // nginx takes a chunked body; Baton itself does not
        let session = makeSession(gateway.url, store: store, clock: clock)
        var upload = URLRequest(url: URL(string: "/api/upload")!)
        upload.httpMethod = "POST"
        upload.httpBodyStream = InputStream(data: Data("a large upload".utf8))
        let error = await #expect(throws: BatonClientError.self) { try await session.send(upload) }
        guard case .invalidRequest(let message) = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(message.contains("httpBodyStream") && message.contains("token_expired"))
        #expect(await session.generation == 1)  // the session did its part: the next request passes
        #expect(try await session.get("/api/orders") == 200)
    }
}

/// Issue 42, F15: a request whose Swift task was cancelled before it started, and which a
/// logout then refused to start, left its id in the early-cancellation set for good.
@Suite struct InFlightRequestsTests {
    struct NeverSent: CancellableRequest { func cancel() {} }

    @Test func aRequestCancelledThenRefusedByALogoutLeavesNothing() {
        let requests = InFlightRequests()
        let id = UUID()
        let epoch = requests.epoch
        requests.cancel(id: id)  // its Swift task was cancelled before the task existed
        requests.cancelAll()     // then a logout
        #expect(!requests.insert(NeverSent(), id: id, cancellableAtLogout: true, epoch: epoch))
        requests.remove(id: id)  // the transport's cleanup after every request
        #expect(requests.isEmpty)
    }

    @Test func finishedAndCancelledRequestsLeaveNothing() {
        let requests = InFlightRequests()
        for index in 0..<100 {
            let id = UUID()
            if index % 2 == 0 { requests.cancel(id: id) }
            _ = requests.insert(NeverSent(), id: id, cancellableAtLogout: index % 3 == 0, epoch: requests.epoch)
            if index % 5 == 0 { requests.cancelAll() }
            requests.remove(id: id)
        }
        #expect(requests.isEmpty)
    }
}

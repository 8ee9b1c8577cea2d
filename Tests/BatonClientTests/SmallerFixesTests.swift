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

/// Issue 42, F12: a background URLSession given as `urlSession:` crashed the app at its first
/// request (Apple runs no completion-handler tasks on one). It is refused with a clear error:
/// at configuration time by `BatonSession.validate(urlSession:)`, and by every request of a
/// session made with it (`HTTPTransport.sendOnce`), which never reaches the network. Linux
/// cannot make a background configuration (`background(withIdentifier:)` is Darwin-only), so
/// the decision is tested on what the code reads of it, the configuration's identifier; the
/// iOS type-check compiles the rest.
@Suite struct BackgroundURLSessionTests {
    @Test func aBackgroundConfigurationIsRefusedWithAClearError() throws {
        let refusal = try #require(HTTPTransport.refusal(identifier: "com.example.bank.refresh"))
        guard case .invalidRequest(let why) = refusal else { Issue.record("\(refusal)"); return }
        #expect(why.contains("background session") && why.contains("com.example.bank.refresh") && why.contains("ephemeral"))
        #expect(HTTPTransport.refusal(identifier: nil) == nil)
        let ephemeral = URLSession(configuration: .ephemeral)
        defer { ephemeral.invalidateAndCancel() }
        try BatonSession.validate(urlSession: ephemeral)
        try BatonSession.validate(urlSession: URLSession(configuration: .default))
    }
}

/// Issue 42, F4: the App Group lock file was made with no data protection class, so under the
/// app's default `complete` class every exchange while the device was locked failed. The file
/// is now made with an explicit class, readable after the first unlock like the credentials it
/// guards. Linux has no data protection: what is tested here is the configuration the code
/// builds (the class, and that a missing lock file is made owner-only before it is opened);
/// the iOS type-check compiles the Apple branch.
@Suite struct LockFileProtectionTests {
    @Test func theLockFileIsMadeWithAnExplicitProtectionClass() async throws {
        #expect(FileLock.protection == .completeUntilFirstUserAuthentication)
        #expect(FileLock.creationAttributes[.posixPermissions] as? Int == 0o600)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.lock"
        let lock = try await FileLock(path: path).acquire()
        lock.unlock()
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}

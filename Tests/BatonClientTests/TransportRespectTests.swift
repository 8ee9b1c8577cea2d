@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The transport keeps the token within the base URL's origin and leaves the app's own request
/// settings alone (issue 18, defects 4 and 10).
@Suite(.ownThreads) struct TransportRespectTests {
    /// A session holding a token that the client considers valid for an hour (nothing here
    /// reaches Baton: the token is only looked at by the listeners).
    static func sessionHoldingAToken(baseURL: URL) -> BatonSession {
        let bundle = TokenBundle(token: "bt1_" + String(repeating: "t", count: 40), expiresAt: Date().addingTimeInterval(3600),
                                 chainID: "c1", lifetime: 3600)
        return makeSession(baseURL, store: MemoryCredentialStore(StoredCredentials(deviceID: "device-1", bundle: bundle)))
    }

    /// The echo application's view of a request: the headers it received.
    static func echoed(_ data: Data) throws -> [String: String] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
    }

    @Test func tokenGoesOnlyToTheBaseURLsOriginAndIsStrippedOnACrossOriginRedirect() async throws {
        let echo = try EchoApplication()  // another origin: same host, another port
        let redirector = try RedirectListener(to: "http://127.0.0.1:\(echo.port)/landed")
        defer { redirector.stop() }
        let session = Self.sessionHoldingAToken(baseURL: URL(string: "http://127.0.0.1:\(redirector.port)")!)

        // Sent straight to another origin: no token.
        let (direct, _) = try await session.send(URLRequest(url: URL(string: "http://127.0.0.1:\(echo.port)/upload")!))
        #expect(try Self.echoed(direct)["authorization"] == nil)

        // Sent to the base URL, which redirects elsewhere: the token reached the base URL only.
        let (landed, response) = try await session.send(URLRequest(url: URL(string: "/download")!))
        #expect(response.statusCode == 200)
        #expect(redirector.requests.count == 1)
        #expect(redirector.requests.first?.contains("authorization: bearer bt1_") == true)
        let headers = try Self.echoed(landed)
        #expect(headers["path"] == "/landed")
        #expect(headers["authorization"] == nil, "the token followed the redirect: \(headers)")
    }

    @Test func requestsOwnTimeoutAndUserAgentAreKept() async throws {
        let echo = try EchoApplication()
        let silent = try SilentListener()
        defer { silent.stop() }
        let session = Self.sessionHoldingAToken(baseURL: URL(string: "http://127.0.0.1:\(echo.port)")!)
        // The session's timeout is 20 s; this request asks for 1 s.
        var slow = URLRequest(url: URL(string: "http://127.0.0.1:\(silent.port)/slow")!)
        slow.timeoutInterval = 1
        let started = Date()
        await #expect(throws: BatonClientError.self) { try await session.send(slow) }
        #expect(Date().timeIntervalSince(started) < 10)

        var own = URLRequest(url: URL(string: "/ua")!)
        own.setValue("MyApp/7 (custom)", forHTTPHeaderField: "User-Agent")
        let prepared = try session.transport.prepare(own, deviceID: nil, authorization: nil)
        #expect(prepared.value(forHTTPHeaderField: "User-Agent") == "MyApp/7 (custom)")
        #expect(prepared.timeoutInterval == 20)  // no timeout of its own: the session's
        let plain = try session.transport.prepare(URLRequest(url: URL(string: "/ua")!), deviceID: nil, authorization: nil)
        #expect(plain.value(forHTTPHeaderField: "User-Agent") == "BatonClientTests/1 BatonClient/\(BatonConfiguration.libraryVersion)")
    }

    @Test func httpErrorsKeepTheResponseHeaders() async throws {
        // Wrong passwords until the server's per-account limit answers 429 with Retry-After.
        let server = try startServer()
        let session = makeSession(server.baseURL)
        var last: BatonClientError?
        for _ in 0..<20 {
            do {
                try await session.login(username: "alice", password: "wrong password")
            } catch let error as BatonClientError {
                last = error
                if case .http(429, _, _, _) = error { break }
            }
        }
        guard case .http(429, _, _, let headers) = last else {
            Issue.record("no 429 after 20 wrong passwords: \(String(describing: last))")
            return
        }
        #expect(headers.keys.contains { $0.lowercased() == "retry-after" })
        #expect((last?.retryAfter ?? 0) > 0)
    }
}

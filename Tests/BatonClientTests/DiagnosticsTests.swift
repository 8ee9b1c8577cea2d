@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// The client's diagnostics (issue 29, M7): every path that ends a session says so, with the
/// reason and the chain, and no diagnostic ever carries a token.
@Suite(.ownThreads) struct DiagnosticsTests {
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [BatonDiagnostic] = []
        func record(_ diagnostic: BatonDiagnostic) { lock.withLock { recorded.append(diagnostic) } }
        var all: [BatonDiagnostic] { lock.withLock { recorded } }
    }

    static func session(_ server: ServerProcess, _ recorder: Recorder, store: any CredentialStore = MemoryCredentialStore()) -> BatonSession {
        var configuration = BatonConfiguration(baseURL: server.baseURL, appName: "BatonClientTests/1", requestTimeout: 20, expiryMargin: 0)
        configuration.diagnostics = { recorder.record($0) }
        return BatonSession(configuration: configuration, store: store)
    }

    @Test func anEndedSessionSaysWhyAndNoDiagnosticCarriesAToken() async throws {
        let server = try startServer(["--one-chain-per-device-class"])
        let recorder = Recorder()
        let first = Self.session(server, recorder), second = Self.session(server, Recorder())
        try await first.loginAlice()
        let token = try #require(await first.token)
        let chain = try #require(await first.heldBundle?.chainID)
        try await second.loginAlice()
        await #expect(throws: BatonClientError.self) { try await first.get("/v1/verify") }
        let ended = recorder.all.filter { $0.level == .error }
        #expect(ended.count == 1)
        #expect(ended.first?.message == "session ended: the user must log in again")
        #expect(ended.first?.metadata["chain"] == chain)
        #expect(ended.first?.metadata["reason"] == "chain_revoked:logged_in_elsewhere", "\(ended)")
        for diagnostic in recorder.all {
            #expect(!diagnostic.message.contains("bt1_") && !diagnostic.metadata.values.contains { $0.contains("bt1_") || $0.contains(token) })
        }
    }

    /// A failed exchange keeps the session and says so.
    @Test func aFailedExchangeIsANoticeNotAnEnd() async throws {
        let server = try startServer()
        let recorder = Recorder()
        let clock = TestClock()
        var configuration = BatonConfiguration(baseURL: server.baseURL, appName: "BatonClientTests/1", requestTimeout: 20,
                                               expiryMargin: 0, exchangeAttempts: 1, now: clock.now)
        configuration.diagnostics = { recorder.record($0) }
        let session = BatonSession(configuration: configuration, store: MemoryCredentialStore())
        try await session.loginAlice()
        clock.advance(by: pastTheLifetime)
        _ = server.stop()  // no server: every exchange attempt fails
        await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        #expect(recorder.all.contains { $0.level == .notice && $0.message == "exchange failed; the session keeps its token" })
        #expect(!recorder.all.contains { $0.level == .error })
    }
}

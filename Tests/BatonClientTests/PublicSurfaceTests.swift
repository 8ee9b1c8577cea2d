@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// What issue 29 adds to the public surface for app teams: device key factories for stores of
/// their own (M4), a protocol over the session for their tests, readable errors.
@Suite(.ownThreads) struct PublicSurfaceTests {
    /// A store of the app's own that keeps the device key's scalar as the library's stores do.
    final class OwnStore: CredentialStore, @unchecked Sendable {
        private let lock = NSLock()
        private let inner = MemoryCredentialStore()
        private var scalar: [UInt8]?
        func load() throws(BatonClientError) -> StoredCredentials? { try inner.load() }
        func save(_ credentials: StoredCredentials) throws(BatonClientError) { try inner.save(credentials) }
        func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
        func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
            if let scalar = lock.withLock({ scalar }) { return try DeviceKey(privateScalar: scalar) }
            guard creating else { return nil }
            let (key, made) = try DeviceKey.makeSoftwareKey()
            lock.withLock { scalar = made }
            return key
        }
    }

    @Test func aStoreOfTheAppsOwnBindsWithThePublicFactories() async throws {
        let server = try startServer()
        let session = makeSession(server.baseURL, store: OwnStore())
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        #expect(try await session.get("/v1/verify") == 200)
    }

    @Test func theSessionIsUsableThroughItsProtocol() async throws {
        let server = try startServer()
        let session: any BatonSessionProtocol = makeSession(server.baseURL)
        try await session.login(username: "alice", password: "correct horse battery", deviceClass: .mobile, deviceName: nil)
        guard case .loggedIn = await session.status else { Issue.record("not logged in"); return }
        let (_, response) = try await session.send(URLRequest(url: URL(string: "/v1/verify")!))
        #expect(response.statusCode == 200)
        #expect(await session.logout())
    }

    @Test func errorsDescribeThemselves() {
        let errors: [BatonClientError] = [.loginRequired(.tokenReused), .credentialsUnavailable("locked"), .cancelled,
                                          .http(status: 429, error: ServerError(code: "too_many_attempts"), body: Data(), headers: [:])]
        for error in errors { #expect((error as any Error).localizedDescription.count > 10, "\(error)") }
        #expect(BatonClientError.loginRequired(.tokenReused).localizedDescription == LoginRequiredReason.tokenReused.defaultMessage)
    }
}

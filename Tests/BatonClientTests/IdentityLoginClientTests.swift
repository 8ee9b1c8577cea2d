@testable import BatonClient
import BatonCore
import BatonDPoP
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `login(idToken:)` and `login(assertion:)` against the real `baton serve` (issue 46): the
/// nonce the client computes is the one the server requires, the session is bound to the
/// store's device key from its first token, and from then on it behaves exactly as a password
/// login's (exchange, reuse detection, logout). Tokens are signed here with an issuer key the
/// server was given as a static JWK Set (`issuer add --jwks-file`).
@Suite(.ownThreads) struct IdentityLoginClientTests {
    static let provider = ProofSigner(.es256(ES256SigningKey.generate()))
    static let issuerURL = "https://login.bank.test"

    static func server(tokenType: String = "id_token") throws -> ServerProcess {
        let server = try startServer()
        var jwk = provider.publicJWK
        if case .object(var members) = jwk { members["kid"] = .string("k1"); jwk = .object(members) }
        let file = server.directory + "/jwks.json"
        try JSONValue.object(["keys": .array([jwk])]).text.write(toFile: file, atomically: true, encoding: .utf8)
        let added = try runBaton(["admin", "issuer", "add", "bank", "--issuer", issuerURL, "--client-id", "bank-app",
                                  "--token-type", tokenType, "--jwks-file", file, "--db", server.databasePath])
        guard added.0 == 0 else { throw ServerProcess.ServerError.didNotStart("issuer add: \(added.2)") }
        return server
    }

    static func token(_ extra: [String: JSONValue]) -> String {
        let now = SystemClock().now().epochSeconds
        let claims: [String: JSONValue] = ["iss": .string(issuerURL), "sub": .string("customer-9"), "aud": .string("bank-app"),
                                           "iat": .int(now), "exp": .int(now + 300)].merging(extra) { $1 }
        return provider.sign(header: .object(["alg": .string("ES256"), "kid": .string("k1")]), claims: .object(claims))
    }

    @Test func anIDTokenLoginIsBoundAndBehavesAsAPasswordLogin() async throws {
        let server = try Self.server()
        let store = MemoryCredentialStore()
        let clock = TestClock()
        let session = makeSession(server.baseURL, store: store, clock: clock)
        let nonce = try await session.identityNonce()
        let key = try #require(try store.deviceKey(creating: false))
        #expect(nonce == BatonSession.identityNonce(forThumbprint: key.thumbprint))
        try await session.login(idToken: Self.token(["nonce": .string(nonce)]), deviceName: "Test phone")
        let login = try #require(await session.heldBundle)
        #expect(login.tokenType == .dpop && login.keyThumbprint == key.thumbprint)
        #expect(try await session.get("/v1/verify") == 200)
        clock.advance(by: pastTheLifetime)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 1)
        let sessions = try await session.sessions()
        #expect(sessions.count == 1 && sessions[0].isCurrent && sessions[0].isBound && sessions[0].deviceName == "Test phone")
        #expect(await session.logout())
        #expect(try server.auditKinds().filter { $0 == "login_succeeded" }.count == 1)
    }

    /// An account without a password steps up through the provider: the gateway's challenge
    /// asks the app for a fresh ID token, which confirms once for every request waiting on it.
    @Test func stepUpAsksTheProviderForAFreshIDToken() async throws {
        let server = try Self.server()
        let session = makeSession(server.baseURL, store: MemoryCredentialStore())
        let nonce = try await session.identityNonce()
        let now = SystemClock().now().epochSeconds
        try await session.login(idToken: Self.token(["nonce": .string(nonce), "auth_time": .int(now - 3600)]))
        await #expect(throws: BatonClientError.self) { _ = try await session.get("/v1/verify?max_age=300") }
        final class Asked: @unchecked Sendable {
            let lock = NSLock()
            var maxAges: [Int?] = []
        }
        let asked = Asked()
        let request = URLRequest(url: URL(string: server.baseURL.absoluteString + "/v1/verify?max_age=300")!)
        let (_, response) = try await session.sendConfirmingWithIDToken(request) { maxAge in
            asked.lock.withLock { asked.maxAges.append(maxAge) }
            return Self.token(["nonce": .string(nonce), "auth_time": .int(SystemClock().now().epochSeconds)])
        }
        #expect(response.statusCode == 200)
        #expect(asked.lock.withLock { asked.maxAges } == [300])
        #expect(try server.auditKinds().contains("step_up_succeeded"))
    }

    @Test func anIDTokenMadeForAnotherDevicesKeyIsRefusedAndNothingIsStored() async throws {
        let server = try Self.server()
        let thief = makeSession(server.baseURL, store: MemoryCredentialStore())
        let victim = makeSession(server.baseURL, store: MemoryCredentialStore())
        let stolen = Self.token(["nonce": .string(try await victim.identityNonce())])
        do {
            try await thief.login(idToken: stolen)
            Issue.record("a token minted for another key logged in")
        } catch BatonClientError.http(400, let error, _, _) {
            #expect(error?.code == "invalid_grant" && error?.description?.contains("nonce") == true, "\(String(describing: error))")
        }
        #expect(await thief.heldBundle == nil)
        // The victim's own login with it still works: the refusal did not spend it.
        try await victim.login(idToken: stolen)
        #expect(try await victim.get("/v1/verify") == 200)
    }

    @Test func anAssertionCarriesTheDeviceKeysThumbprint() async throws {
        let server = try Self.server(tokenType: "jwt")
        let session = makeSession(server.baseURL, store: MemoryCredentialStore())
        let jkt = try await session.deviceKeyThumbprint()
        try await session.login(assertion: Self.token(["cnf": .object(["jkt": .string(jkt)]), "jti": .string("backend-1")]))
        #expect(try await session.get("/v1/verify") == 200)
        // The backend's jti is used once, even in another assertion.
        let again = makeSession(server.baseURL, store: MemoryCredentialStore())
        let otherJKT = try await again.deviceKeyThumbprint()
        await #expect(throws: BatonClientError.self) {
            try await again.login(assertion: Self.token(["cnf": .object(["jkt": .string(otherJKT)]), "jti": .string("backend-1"),
                                                         "iat": .int(SystemClock().now().epochSeconds - 1)]))
        }
    }

    @Test func withoutADeviceKeyTheLoginIsRefusedBeforeAnythingIsSent() async throws {
        let server = try Self.server()
        var configuration = BatonConfiguration(baseURL: server.baseURL, appName: "BatonClientTests/1", requestTimeout: 20)
        configuration.deviceBinding = .off
        configuration.installationMarker = .none
        let session = BatonSession(configuration: configuration, store: MemoryCredentialStore())
        await #expect(throws: BatonClientError.self) { _ = try await session.identityNonce() }
        await #expect(throws: BatonClientError.self) { try await session.login(idToken: Self.token([:])) }
        #expect(try server.auditKinds().filter { $0.hasPrefix("login") }.isEmpty)
    }
}

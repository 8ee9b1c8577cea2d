import BatonCore
import BatonDPoP
import Foundation
import Testing

/// `POST /v1/token-exchange` against identity providers we did not configure by hand: the test
/// provider (scripts/test_idp.py: joserfc, HTTPS with a throwaway CA, discovery and JWKS,
/// rotation, every negative case on demand) and the PyPI `oidc-provider-mock`. Keys are found by
/// discovery and fetched by the server with libcurl, within the bounds of docs/identity.md.
@Suite(.serialized, .enabled(if: josePython != nil, "needs joserfc from PyPI: ./scripts/jose-venv or ./scripts/idp-venv (./scripts/test runs both)"))
struct IdentityProviderTests {
    static let audience = "bank-app"

    /// A test provider and a server that trusts it (issuer `bank`, every algorithm), with
    /// short refetch and fetch bounds so that rotation and a slow provider show in seconds.
    static func setUp(issuerURL: ((TestIdentityProvider) -> String)? = nil) throws -> (TestIdentityProvider, ServerProcess) {
        let server = try ServerProcess(["--identity-refetch-interval", "1s", "--identity-fetch-timeout", "2s"])
        let provider = try TestIdentityProvider(script: "test_idp.py", python: josePython!, directory: server.directory)
        let added = try runBaton(["admin", "issuer", "add", "bank", "--issuer", issuerURL?(provider) ?? provider.issuer, "--client-id", audience,
                                  "--algorithm", "RS256", "--algorithm", "PS256", "--algorithm", "ES256", "--algorithm", "EdDSA",
                                  "--ca-file", provider.caFile, "--db", server.databasePath])
        guard added.0 == 0 else { throw ServerProcess.ServerError.didNotStart("issuer add: \(added.2)") }
        return (provider, server)
    }

    static func claims(_ provider: TestIdentityProvider, for device: Device, _ changes: [String: Any?] = [:]) -> [String: Any] {
        let now = SystemClock().now().epochSeconds
        var claims: [String: Any] = [
            "iss": provider.issuer, "sub": "customer-7", "aud": audience, "iat": now, "exp": now + 300,
            "nonce": Base64URL.encode(Digest.sha256(Array(device.signer.thumbprint.text.utf8))),
            "jti": UUID().uuidString,
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    static func exchange(_ server: ServerProcess, _ token: String, _ device: Device) throws -> HTTPConnection.Response {
        try IdentityLoginTests.exchange(server, token, device: device)
    }

    @Test func tokensOfEveryAllowedAlgorithmLogInThroughDiscoveredKeys() throws {
        let (provider, server) = try Self.setUp()
        defer { provider.stop() }
        for alg in ["RS256", "PS256", "ES256", "EdDSA"] {
            let device = Device()
            let answer = try Self.exchange(server, try provider.mint(Self.claims(provider, for: device), alg: alg), device)
            #expect(answer.status == 200, "\(alg): \(answer.text)")
            let token = try #require(answer.json["token"] as? String)
            #expect(try server.dpop("POST", "/v1/exchange", token: token, device: device).status == 200, "\(alg)")
        }
        // Four logins of one identity: one account.
        #expect(try runBaton(["admin", "identity", "list", "--db", server.databasePath]).1.split(separator: "\n").count == 2)
    }

    @Test func everyNegativeCaseIsRefusedByNameAndCreatesNothing() throws {
        let (provider, server) = try Self.setUp()
        defer { provider.stop() }
        let device = Device(), other = Device()
        let now = SystemClock().now().epochSeconds
        func token(_ changes: [String: Any?] = [:], alg: String = "RS256", kid: String? = nil, for holder: Device? = nil) throws -> String {
            try provider.mint(Self.claims(provider, for: holder ?? device, changes), alg: alg, kid: kid)
        }
        let cases: [(String, String, String)] = [
            ("wrong iss", try token(["iss": "https://evil.example"]), "issuer (iss) is not one"),
            ("wrong aud", try token(["aud": "another-app"]), "aud contains no accepted client id"),
            ("several audiences, no azp", try token(["aud": [Self.audience, "another-app"]]), "several audiences and no azp"),
            ("expired", try token(["exp": now - 300]), "has expired"),
            ("not yet valid", try token(["nbf": now + 600]), "not valid yet"),
            ("too old", try token(["iat": now - 7200, "exp": now + 300]), "too long ago"),
            ("alg none", try token(alg: "none"), "algorithm 'none' is not allowed"),
            ("HS256 signed with the RSA public key", try token(alg: "HS256-public-key"), "algorithm 'HS256' is not allowed"),
            ("unknown kid", try token(kid: "no-such-key"), "key (kid) is not in its issuer's key set"),
            ("wrong nonce (minted for another key)", try token(for: other), "nonce is not the one"),
            ("no nonce", try token(["nonce": nil]), "nonce is not the one"),
        ]
        for (name, subjectToken, expected) in cases {
            let answer = try Self.exchange(server, subjectToken, device)
            #expect(answer.status == 400 && answer.error == "invalid_grant" && answer.text.contains(expected), "\(name): \(answer.text)")
        }
        #expect(try runBaton(["admin", "user", "list", "--db", server.databasePath]).1.contains("bank-") == false)
        #expect(try server.auditEvents("login_succeeded").isEmpty)
        // Replayed: the same token a second time, from the same device.
        let once = try token()
        #expect(try Self.exchange(server, once, device).status == 200)
        let replay = try Self.exchange(server, once, device)
        #expect(replay.status == 400 && replay.text.contains("already exchanged"), "\(replay.text)")
    }

    @Test func aKeyPublishedAfterRotationIsFetchedOnItsFirstToken() throws {
        let (provider, server) = try Self.setUp()
        defer { provider.stop() }
        let device = Device()
        #expect(try Self.exchange(server, try provider.mint(Self.claims(provider, for: device)), device).status == 200)
        let kid = try #require(try provider.control("rotate")["kid"] as? String)
        let rotated = try provider.mint(Self.claims(provider, for: device), kid: kid)
        // Not published yet: refused as an unknown key, and not spent.
        #expect(try Self.exchange(server, rotated, device).text.contains("key (kid) is not in"))
        try provider.control("publish")
        // Published: accepted once the refetch interval (1 s here) allows the next fetch.
        var answer = try Self.exchange(server, rotated, device)
        let accepted = try eventually(within: 10) {
            if answer.status != 200 { answer = try Self.exchange(server, rotated, device) }
            return answer.status == 200
        }
        #expect(accepted, "\(answer.text)")
    }

    @Test func aProviderThatMisbehavesIsRefusedWith503AndNothingCreated() throws {
        for (mode, action, expected) in [("slow", "jwks_mode", "timed out"), ("oversized", "jwks_mode", "more than 262144 bytes"),
                                         ("plain_http_jwks", "discovery_mode", "not an https URL"),
                                         ("wrong_issuer", "discovery_mode", "names another issuer")] {
            let (provider, server) = try Self.setUp()
            defer { provider.stop() }
            try provider.control(action, ["mode": mode])
            let device = Device()
            let answer = try Self.exchange(server, try provider.mint(Self.claims(provider, for: device)), device)
            #expect(answer.status == 503 && answer.error == "unavailable", "\(mode): \(answer.text)")
            // The reason is the operator's: logged (UnavailableLog, flushed every 100 ms), not told to the client.
            #expect(eventually { server.stdout.contains(expected) }, "\(mode): \(server.stdout.suffix(2000))")
            #expect(!answer.text.contains(provider.issuer), "\(mode): \(answer.text)")
            #expect(try runBaton(["admin", "user", "list", "--db", server.databasePath]).1.contains("bank-") == false, "\(mode)")
        }
    }

    /// `--ca-file` pins the provider's CA: a provider whose certificate another CA signed (here
    /// a second test provider's own, standing for any CA the system trusts) is refused, the
    /// system's CA directory included (libcurl keeps it beside a CA blob unless told not to).
    @Test func theIssuersOwnCAIsTheOnlyOneTrusted() throws {
        let (provider, server) = try Self.setUp()
        defer { provider.stop() }
        try FileManager.default.createDirectory(atPath: server.directory + "/other", withIntermediateDirectories: true)
        let other = try TestIdentityProvider(script: "test_idp.py", python: josePython!, directory: server.directory + "/other")
        defer { other.stop() }
        let added = try runBaton(["admin", "issuer", "add", "pinned", "--issuer", other.issuer, "--client-id", Self.audience,
                                  "--ca-file", provider.caFile, "--db", server.databasePath])
        try #require(added.0 == 0, "\(added.2)")
        let device = Device()
        let answer = try Self.exchange(server, try other.mint(Self.claims(other, for: device)), device)
        #expect(answer.status == 503, "\(answer.text)")
        // The TLS handshake failed (OpenSSL's words vary: both test CAs have one name).
        #expect(eventually { server.stdout.contains("'pinned' could not be loaded: https://") }, "\(server.stdout.suffix(1000))")
    }

    @Test func aFloodOfForgedKidsCostsTheProviderOnlyTheBoundedRefetchesAndOthersNothing() throws {
        let (provider, server) = try Self.setUp()
        defer { provider.stop() }
        // Another user's bound session, verified throughout the flood.
        try server.addUser("alice")
        let alice = Device()
        let aliceToken = try server.boundLogin(alice)["token"] as! String
        let device = Device()
        #expect(try Self.exchange(server, try provider.mint(Self.claims(provider, for: device)), device).status == 200)
        try provider.control("reset_stats")
        let forged = try (0..<40).map { _ in try provider.mint(Self.claims(provider, for: device), kid: UUID().uuidString) }
        let started = SystemClock().now()
        var refused = 0
        for round in 0..<5 {
            for token in forged where try Self.exchange(server, token, device).text.contains("key (kid) is not in") { refused += 1 }
            #expect(try server.dpop("GET", "/v1/verify", token: aliceToken, device: alice).status == 200, "round \(round)")
        }
        let seconds = Double((SystemClock().now() - started).wholeMilliseconds) / 1000
        let hits = try #require(try provider.control("stats")["jwks_hits"] as? Int)
        #expect(refused == 200)
        // One fetch per refetch interval (1 s) at most, and one for a partial interval.
        #expect(hits <= Int(seconds.rounded(.up)) + 1, "\(hits) JWKS fetches in \(seconds) s for 200 forged tokens")
    }
}

/// The PyPI `oidc-provider-mock` (Authlib-based; an implementation we did not write), served over
/// HTTPS, runs a real authorization-code flow with the device's nonce; its ID token logs in.
@Suite(.enabled(if: IdentityMockProvider.python != nil, "needs oidc-provider-mock from PyPI: ./scripts/idp-venv (./scripts/test runs it)"))
struct IdentityMockProviderTests {
    @Test func anIDTokenFromOIDCProviderMockLogsInEndToEnd() throws {
        let server = try ServerProcess()
        let provider = try TestIdentityProvider(script: "oidc_mock_idp.py", python: IdentityMockProvider.python!, directory: server.directory)
        defer { provider.stop() }
        let added = try runBaton(["admin", "issuer", "add", "mock", "--issuer", provider.issuer, "--client-id", "baton-app",
                                  "--ca-file", provider.caFile, "--db", server.databasePath])
        try #require(added.0 == 0, "\(added.2)")
        let device = Device()
        let nonce = Base64URL.encode(Digest.sha256(Array(device.signer.thumbprint.text.utf8)))
        let minted = try provider.command(["action": "id_token", "sub": "alice-at-the-bank", "nonce": nonce, "client_id": "baton-app"])
        let idToken = try #require(minted["id_token"] as? String, "\(minted)")
        let answer = try IdentityLoginTests.exchange(server, idToken, device: device)
        #expect(answer.status == 200, "\(answer.text)")
        let token = try #require(answer.json["token"] as? String)
        let next = try server.dpop("POST", "/v1/exchange", token: token, device: device)
        #expect(next.status == 200)
        // The successor in use, a second exchange of the first token is reuse.
        #expect(try server.dpop("GET", "/v1/verify", token: next.json["token"] as! String, device: device).status == 200)
        #expect(try server.dpop("POST", "/v1/exchange", token: token, device: device).error == "token_reused")
        let list = try runBaton(["admin", "identity", "list", "--db", server.databasePath]).1
        #expect(list.contains("alice-at-the-bank") && list.contains(provider.issuer), "\(list)")
    }
}

/// The interpreter with `oidc-provider-mock`: `TEST_IDP_PYTHON` (./scripts/test sets it from
/// ./scripts/idp-venv), or .venv-tools/ when that script ran before.
enum IdentityMockProvider {
    static let python: String? = {
        if let path = ProcessInfo.processInfo.environment["TEST_IDP_PYTHON"] { return path }
        let local = repositoryRoot + "/.venv-tools/bin/python"
        guard FileManager.default.isExecutableFile(atPath: local),
              let check = try? runCommand(local, ["-c", "import oidc_provider_mock"]), check.status == 0 else { return nil }
        return local
    }()
}

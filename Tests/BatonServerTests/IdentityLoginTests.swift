import BatonCore
import BatonDPoP
import Foundation
import Testing

/// `POST /v1/token-exchange` end to end on a real server, with an issuer whose keys the
/// operator gave (`issuer add --jwks-file`, the air-gapped setup) and ID tokens signed here:
/// the login it makes is a password login's in every respect (exchange, reuse, binding,
/// "your devices"), each refusal changes nothing, and the admin commands manage issuers and
/// links. The provider fetched over HTTPS, RSA keys, rotation and the PyPI provider are
/// IdentityProviderTests'.
@Suite(.serialized)
struct IdentityLoginTests {
    static let provider = ProofSigner(.es256(ES256SigningKey.generate()))
    static let issuerURL = "https://login.bank.test"

    /// A server with the issuer `bank` (static keys), `newUsers` its policy.
    static func server(on backend: StoreBackend = .sqlite, newUsers: String = "create", extra: [String] = []) async throws -> ServerProcess {
        let server = try await ServerProcess.start(on: backend)
        var jwk = provider.publicJWK
        if case .object(var members) = jwk { members["kid"] = .string("k1"); jwk = .object(members) }
        let file = server.directory + "/jwks.json"
        try JSONValue.object(["keys": .array([jwk])]).text.write(toFile: file, atomically: true, encoding: .utf8)
        let (status, out, err) = try runBaton(["admin", "issuer", "add", "bank", "--issuer", issuerURL, "--client-id", "bank-app",
                                               "--jwks-file", file, "--new-users", newUsers, "--db", server.databasePath] + extra)
        guard status == 0 else { throw ServerProcess.ServerError.didNotStart("issuer add: \(out) \(err)") }
        return server
    }

    static func idToken(for device: Device, sub: String = "customer-1", changes: [String: JSONValue?] = [:]) -> String {
        let now = SystemClock().now().epochSeconds
        var claims: [String: JSONValue] = [
            "iss": .string(issuerURL), "sub": .string(sub), "aud": .string("bank-app"), "iat": .int(now), "exp": .int(now + 300),
            "nonce": .string(Base64URL.encode(Digest.sha256(Array(device.signer.thumbprint.text.utf8)))),
            "jti": .string(Base64URL.encode(SecureRandom.bytes(8))),
        ]
        for (name, value) in changes { claims[name] = value }
        return provider.sign(header: .object(["alg": .string("ES256"), "kid": .string("k1")]), claims: .object(claims))
    }

    static func exchange(_ server: ServerProcess, _ token: String, device: Device?, deviceID: String = "phone-1",
                         type: String = "urn:ietf:params:oauth:token-type:id_token", extra: String = "") throws -> HTTPConnection.Response {
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=\(token)"
            + "&subject_token_type=\(type.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&device_id=\(deviceID)&device_class=mobile" + extra
        let headers = device.map { [("DPoP", $0.proof("POST", "/v1/token-exchange"))] } ?? []
        return try OAuthEndpointTests.post(server, "/v1/token-exchange", form, headers: headers)
    }

    static func users(_ server: ServerProcess) throws -> String {
        try runBaton(["admin", "user", "list", "--db", server.databasePath]).1
    }

    @Test(arguments: StoreBackend.allCases)
    func anIDTokenLogsInToABoundChainThatBehavesLikeAPasswordLogin(_ backend: StoreBackend) async throws {
        let server = try await Self.server(on: backend)
        let device = Device()
        let answer = try Self.exchange(server, Self.idToken(for: device), device: device)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json["token_type"] as? String == "DPoP")
        #expect(answer.json["issued_token_type"] as? String == "urn:ietf:params:oauth:token-type:access_token")
        let token = try #require(answer.json["token"] as? String)
        #expect(answer.json["access_token"] as? String == token)
        // The account was made for the identity, named from its iss and sub, never a claim.
        let users = try Self.users(server)
        #expect(users.contains("bank-"), "\(users)")
        // Bound: verify without the key's proof is refused; with it, accepted.
        #expect(try server.request("GET", "/v1/verify", token: token).status == 401)
        #expect(try server.dpop("GET", "/v1/verify", token: token, device: device).status == 200)
        // Exchanged exactly once; a second exchange of the same token revokes the chain.
        let next = try server.dpop("POST", "/v1/exchange", token: token, device: device)
        #expect(next.status == 200, "\(next.text)")
        // The successor in use (so a second exchange of the old token is not R3a's lost-response retry).
        #expect(try server.dpop("GET", "/v1/verify", token: next.json["token"] as! String, device: device).status == 200)
        let reuse = try server.dpop("POST", "/v1/exchange", token: token, device: device)
        #expect(reuse.error == "token_reused")
        let successor = try server.dpop("GET", "/v1/verify", token: next.json["token"] as! String, device: device)
        #expect(successor.json["reason"] as? String == "reuse_detected", "\(successor.text)")
        // The same identity logs in again to the same account (the link), not a new one.
        let device2 = Device()
        #expect(try Self.exchange(server, Self.idToken(for: device2), device: device2, deviceID: "tablet-1").status == 200)
        #expect(try Self.users(server) == users)
        let show = try runBaton(["admin", "user", "show", users.split(separator: "\n")[1].split(separator: " ")[0].description, "--db", server.databasePath]).1
        #expect(show.contains("1 linked identity") && show.contains("customer-1"), "\(show)")
        let logins = try server.auditEvents("login_succeeded")
        #expect(logins.count == 2 && logins.allSatisfy { ($0["detail"] as? [String: Any])?["method"] as? String == "token_exchange" }, "\(logins)")
    }

    @Test(arguments: StoreBackend.allCases)
    func eachRefusalNamesItsRuleAndCreatesNothing(_ backend: StoreBackend) async throws {
        let server = try await Self.server(on: backend)
        let device = Device(), other = Device()
        let now = SystemClock().now().epochSeconds
        let cases: [(String, String, Device?, String)] = [
            ("wrong nonce (a token minted for another key)", Self.idToken(for: other), device, "nonce"),
            ("no proof", Self.idToken(for: device), nil, "dpop_required"),
            // A forged token is refused before the proof is even looked at (no signature verified).
            ("unknown kid, no proof", Self.provider.sign(header: .object(["alg": .string("ES256"), "kid": .string("k9")]),
                                                         claims: .object(["iss": .string(Self.issuerURL)])), nil, "key (kid) is not in"),
            ("wrong audience", Self.idToken(for: device, changes: ["aud": .string("other-app")]), device, "audience"),
            ("expired", Self.idToken(for: device, changes: ["exp": .int(now - 120)]), device, "expired"),
            ("too old", Self.idToken(for: device, changes: ["iat": .int(now - 3600)]), device, "too long ago"),
            ("unknown issuer", Self.idToken(for: device, changes: ["iss": .string("https://evil.test")]), device, "issuer"),
        ]
        for (name, token, proofDevice, expected) in cases {
            let answer = try Self.exchange(server, token, device: proofDevice)
            #expect(answer.status == 400, "\(name): \(answer.text)")
            #expect(answer.text.contains(expected), "\(name): \(answer.text)")
        }
        #expect(try Self.users(server).contains("bank-") == false)
        #expect(try server.auditEvents("login_succeeded").isEmpty)
        // A token is exchanged once: the second time, refused, whatever the key.
        let token = Self.idToken(for: device)
        #expect(try Self.exchange(server, token, device: device).status == 200)
        let again = try Self.exchange(server, token, device: device, deviceID: "phone-2")
        #expect(again.status == 400 && again.error == "invalid_grant" && again.text.contains("already exchanged"), "\(again.text)")
        // Bad requests are named.
        #expect(try Self.exchange(server, token, device: device, type: "urn:x").text.contains("subject_token_type"))
        #expect(try Self.exchange(server, token, device: device, extra: "&audience=x").text.contains("'audience' is not supported"))
    }

    @Test(arguments: StoreBackend.allCases)
    func aLinkedOnlyIssuerRefusesUnlinkedIdentitiesUntilTheOperatorLinksThem(_ backend: StoreBackend) async throws {
        let server = try await Self.server(on: backend, newUsers: "linked-only")
        try server.addUser("alice")
        let device = Device()
        let refused = try Self.exchange(server, Self.idToken(for: device), device: device)
        #expect(refused.status == 400 && refused.text.contains("No account is linked"), "\(refused.text)")
        let link = try runBaton(["admin", "identity", "link", "alice", "--issuer", "bank", "--subject", "customer-1", "--db", server.databasePath])
        #expect(link.0 == 0, "\(link)")
        // The refused token was not spent: the same one works once the identity is linked.
        let answer = try Self.exchange(server, Self.idToken(for: device), device: device)
        #expect(answer.status == 200, "\(answer.text)")
        let verified = try server.dpop("GET", "/v1/verify", token: answer.json["token"] as! String, device: device)
        #expect(verified.json["username"] as? String == "alice", "\(verified.text)")
        let list = try runBaton(["admin", "identity", "list", "--db", server.databasePath]).1
        #expect(list.contains("alice") && list.contains(Self.issuerURL) && list.contains("customer-1"), "\(list)")
        // Disabled: refused after the token checks, as a password login is.
        _ = try runBaton(["admin", "user", "disable", "alice", "--db", server.databasePath])
        #expect(try Self.exchange(server, Self.idToken(for: device), device: device).error == "account_disabled")
        _ = try runBaton(["admin", "user", "enable", "alice", "--db", server.databasePath])
        // Unlinked, and the issuer removed: both refuse.
        #expect(try runBaton(["admin", "identity", "unlink", "--issuer", "bank", "--subject", "customer-1", "--db", server.databasePath]).0 == 0)
        #expect(try Self.exchange(server, Self.idToken(for: device), device: device).text.contains("No account is linked"))
        #expect(try runBaton(["admin", "issuer", "remove", "bank", "--db", server.databasePath]).0 == 0)
        #expect(try Self.exchange(server, Self.idToken(for: device), device: device).text.contains("issuer (iss) is not one"))
    }

    @Test(arguments: StoreBackend.allCases)
    func stepUpThroughTheProviderTakesItsAuthTimeAndOnlyTheLinkedIdentity(_ backend: StoreBackend) async throws {
        let server = try await Self.server(on: backend)
        let device = Device()
        let now = SystemClock().now().epochSeconds
        // A provider session that authenticated an hour ago: the chain's auth_time is that.
        let login = try Self.exchange(server, Self.idToken(for: device, changes: ["auth_time": .int(now - 3600)]), device: device)
        let token = try #require(login.json["token"] as? String, "\(login.text)")
        let stale = try server.dpop("GET", "/v1/verify?max_age=300", token: token, device: device)
        #expect(stale.error == "insufficient_user_authentication", "\(stale.text)")
        // Another identity's fresh token confirms nothing.
        let other = Self.idToken(for: device, sub: "customer-2", changes: ["auth_time": .int(now)])
        let refused = try server.dpop("POST", "/v1/confirm", token: token, device: device, json: #"{"id_token":"\#(other)"}"#)
        #expect(refused.status == 400 && refused.text.contains("not linked to this session"), "\(refused.text)")
        // The account's own fresh authentication does, once.
        let fresh = Self.idToken(for: device, changes: ["auth_time": .int(now)])
        let confirmed = try server.dpop("POST", "/v1/confirm", token: token, device: device, json: #"{"id_token":"\#(fresh)"}"#)
        #expect(confirmed.status == 200 && confirmed.json["auth_time"] != nil, "\(confirmed.text)")
        #expect(try server.dpop("GET", "/v1/verify?max_age=300", token: token, device: device).status == 200)
        let replayed = try server.dpop("POST", "/v1/confirm", token: token, device: device, json: #"{"id_token":"\#(fresh)"}"#)
        #expect(replayed.text.contains("already exchanged"), "\(replayed.text)")
        // A token that does not say when the user authenticated confirms nothing (a silent
        // re-issue has a fresh iat and nobody behind it), and a login with one counts as old.
        let silent = Self.idToken(for: device)
        let noAuthTime = try server.dpop("POST", "/v1/confirm", token: token, device: device, json: #"{"id_token":"\#(silent)"}"#)
        #expect(noAuthTime.status == 400 && noAuthTime.text.contains("no auth_time"), "\(noAuthTime.text)")
        let device2 = Device()
        let silentLogin = try Self.exchange(server, Self.idToken(for: device2), device: device2, deviceID: "tablet-9")
        let silentToken = try #require(silentLogin.json["token"] as? String, "\(silentLogin.text)")
        #expect(try server.dpop("GET", "/v1/verify?max_age=300", token: silentToken, device: device2).error == "insufficient_user_authentication")
        #expect(try server.dpop("GET", "/v1/verify", token: silentToken, device: device2).status == 200)
        // An account made by the provider has no password to confirm with.
        let password = try server.dpop("POST", "/v1/confirm", token: token, device: device, json: #"{"password":"anything at all"}"#)
        #expect(password.status == 401, "\(password.text)")
    }

    @Test func issuerSettingsAreCheckedAndNamed() throws {
        let server = try ServerProcess()
        func add(_ arguments: [String]) throws -> (Int32, String, String) {
            try runBaton(["admin", "issuer", "add", "bank"] + arguments + ["--db", server.databasePath])
        }
        #expect(try add(["--issuer", "http://plain.test", "--client-id", "a"]).2.contains("--issuer must be an https URL"))
        #expect(try add(["--issuer", "https://ok.test"]).2.contains("--client-id"))
        #expect(try add(["--issuer", "https://ok.test", "--client-id", "a", "--algorithm", "HS256"]).2.contains("never none or an HMAC"))
        #expect(try add(["--issuer", "https://ok.test", "--client-id", "a", "--jwks-file", "/nonexistent"]).2.contains("--jwks-file: cannot read /nonexistent"))
        #expect(try add(["--issuer", "https://ok.test", "--client-id", "a"]).0 == 0)
        try server.addUser("alice")
        func link(_ arguments: [String]) throws -> (Int32, String, String) {
            try runBaton(["admin", "identity", "link", "alice"] + arguments + ["--db", server.databasePath])
        }
        #expect(try link(["--issuer", "bank", "--subject", "a\u{1b}[2Jb"]).2.contains("Invalid value for '--subject'"))
        #expect(try link(["--issuer", "https://ok.test?x", "--subject", "s"]).2.contains("--issuer must be an https URL"))
        #expect(try link(["--issuer", "nobody\u{1b}", "--subject", "s"]).2.contains("no issuer named 'nobody\\u{1b}'"))
        #expect(try runBaton(["admin", "issuer", "remove", "Bad Name", "--db", server.databasePath]).2.contains("the issuer's name must be"))
        #expect(try add(["--issuer", "https://other.test", "--client-id", "a"]).2.contains("configured already"))
        let list = try runBaton(["admin", "issuer", "list", "--db", server.databasePath]).1
        #expect(list.contains("https://ok.test") && list.contains("discovery") && list.contains("RS256,ES256"), "\(list)")
    }
}

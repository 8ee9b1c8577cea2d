import BatonCore
import Foundation
import Testing

/// Issue 31: RFC 7662 introspection, RFC 7009 revocation and RFC 8414 metadata, for gateways
/// and resource servers that speak OAuth (Kong, API managers), against a real `baton serve`.
@Suite struct OAuthEndpointTests {
    static let clientID = "kong"
    static let secret = "s3cr3t-of-thirty-two-characters-or-more"

    /// A server with one introspection client, its secret in a 0600 file in the server's directory.
    static func server(_ more: [String] = []) throws -> ServerProcess {
        let directory = NSTemporaryDirectory() + "baton-e2e-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/kong.secret"
        try (secret + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let server = try ServerProcess(["--introspection-client", "\(clientID):\(path)"] + more, directory: directory)
        try server.addUser("alice")
        return server
    }

    static func basic(_ id: String = clientID, _ secret: String = secret) -> (String, String) {
        ("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString())
    }

    /// A form POST as an OAuth client sends it.
    static func post(_ server: ServerProcess, _ path: String, _ form: String, headers: [(String, String)] = [basic()],
                     contentType: String = "application/x-www-form-urlencoded") throws -> HTTPConnection.Response {
        let connection = try server.connect()
        defer { connection.close() }
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(contentType)\r\nContent-Length: \(form.utf8.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try connection.send(head + "\r\n" + form)
        return try connection.readResponse()
    }

    static func encoded(_ token: String) -> String { token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token }

    @Test func anActiveTokenReportsItsClaimsAndIsNotMarkedPresented() throws {
        let server = try Self.server()
        let bundle = try server.login()
        let token = bundle["token"] as! String
        let chain = bundle["chain_id"] as! String
        let answer = try Self.post(server, "/v1/introspect", "token=\(Self.encoded(token))&token_type_hint=access_token")
        #expect(answer.status == 200 && answer.headers["cache-control"] == "no-store", "\(answer.text)")
        let json = answer.json
        #expect(json["active"] as? Bool == true && json["sub"] as? String == "1" && json["username"] as? String == "alice")
        #expect(json["token_type"] as? String == "Bearer" && json["chain_id"] as? String == chain && json["device_id"] as? String == "phone-1")
        #expect(json["iss"] as? String == "http://127.0.0.1" && json["cnf"] == nil)
        let exp = try #require(json["exp"] as? Int), iat = try #require(json["iat"] as? Int), authTime = try #require(json["auth_time"] as? Int)
        #expect(exp - iat == 900 && authTime <= iat + 1, "\(json)")
        // R3a is untouched: the resource server's question is not the device presenting its token.
        let presented = try queryDatabase("SELECT head_presented FROM chains WHERE id = \(ChainID(hex: chain)!.rawValue)", at: server.databasePath)
        #expect(presented == [["0"]])
        #expect(try server.auditEvents("chain_revoked").isEmpty)
    }

    @Test func anyTokenThatGrantsNothingIsOnlyInactive() throws {
        let server = try Self.server()
        let token = try server.login()["token"] as! String
        let next = try server.request("POST", "/v1/exchange", token: token).json["token"] as! String
        // Forged: the MAC's last character changed (to another one: a fixed "AA" was the token
        // itself once in 4,096 runs, and CI met that run).
        let forged = String(next.dropLast()) + (next.hasSuffix("A") ? "B" : "A")
        for (what, candidate) in [("consumed", token), ("forged", forged), ("garbage", "not-a-token"),
                                  ("empty-ish", "%20")] {
            let answer = try Self.post(server, "/v1/introspect", "token=\(what == "empty-ish" ? candidate : Self.encoded(candidate))")
            #expect(answer.status == 200 && answer.text == #"{"active":false}"#, "\(what): \(answer.text)")
        }
        // Introspecting the consumed token revoked nothing (R4 stays with the holder's requests).
        #expect(try server.request("GET", "/v1/verify", token: next).status == 200)
        // A revoked chain's head is inactive too.
        #expect(try server.request("POST", "/v1/logout", token: next).status == 204)
        #expect(try Self.post(server, "/v1/introspect", "token=\(Self.encoded(next))").text == #"{"active":false}"#)
    }

    @Test func aBoundTokenReportsItsKeyThumbprint() throws {
        let server = try Self.server()
        let device = Device()
        let bundle = try server.boundLogin(device)
        let answer = try Self.post(server, "/v1/introspect", "token=\(Self.encoded(bundle["token"] as! String))")
        let json = answer.json
        #expect(json["active"] as? Bool == true && json["token_type"] as? String == "DPoP", "\(answer.text)")
        let jkt = (json["cnf"] as? [String: Any])?["jkt"] as? String
        #expect(jkt == device.signer.thumbprint.text, "\(answer.text)")
    }

    @Test func aCallerWithoutTheClientSecretLearnsNothing() throws {
        let server = try Self.server()
        let token = try server.login()["token"] as! String
        let form = "token=\(Self.encoded(token))"
        let attempts: [(String, [(String, String)])] = [
            ("no authentication", []), ("the wrong secret", [Self.basic(Self.clientID, Self.secret + "x")]),
            ("an unknown client", [Self.basic("stranger", Self.secret)]), ("the token as bearer", [("Authorization", "Bearer " + token)]),
            ("malformed Basic", [("Authorization", "Basic !!!")]), ("a prefix of the secret", [Self.basic(Self.clientID, String(Self.secret.prefix(10)))]),
        ]
        // Each from an address of its own: repeated failures from one address are throttled (below).
        for (index, (what, headers)) in attempts.enumerated() {
            for (offset, path) in ["/v1/introspect", "/v1/revoke"].enumerated() {
                let answer = try Self.post(server, path, form, headers: headers + [("X-Forwarded-For", "198.51.100.\(index * 2 + offset + 1)")])
                #expect(answer.status == 401 && answer.error == "invalid_client" && answer.headers["www-authenticate"] == #"Basic realm="baton""#,
                        "\(what) \(path): \(answer.status) \(answer.text)")
                #expect(!answer.text.contains("alice") && answer.json["active"] == nil, "\(what)")
            }
        }
        #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
        // A server without any client refuses everyone the same way.
        let bare = try ServerProcess()
        #expect(try Self.post(bare, "/v1/introspect", form).error == "invalid_client")
    }

    @Test func anAddressSendingWrongSecretsIsThrottledAndTheRightSecretStillPasses() throws {
        let server = try Self.server()
        let token = try server.login()["token"] as! String
        let form = "token=\(Self.encoded(token))"
        let guesser = ("X-Forwarded-For", "192.0.2.7")
        for guess in 0..<20 {
            #expect(try Self.post(server, "/v1/introspect", form, headers: [Self.basic(Self.clientID, "guess-\(guess)"), guesser]).status == 401)
        }
        let blocked = try Self.post(server, "/v1/introspect", form, headers: [Self.basic(Self.clientID, "guess-20"), guesser])
        #expect(blocked.status == 429 && blocked.error == "too_many_attempts" && blocked.headers["retry-after"] == "60", "\(blocked.text)")
        #expect(blocked.json["active"] == nil)
        // The right secret is never refused, from that address or any other.
        #expect(try Self.post(server, "/v1/introspect", form, headers: [Self.basic(), guesser]).json["active"] as? Bool == true)
        #expect(try Self.post(server, "/v1/introspect", form, headers: [Self.basic(), ("X-Forwarded-For", "192.0.2.8")]).json["active"] as? Bool == true)
    }

    /// Issue 43, finding 3: client ids are not secrets, so failures counted per id let anyone
    /// lock a resource server out: 100 wrong secrets for `kong` from 20 addresses, then the right
    /// secret from an address that never authenticated in this process (a new resource-server
    /// instance, or every one after a restart) got 429 for up to an hour. A right secret is never
    /// refused for others' failures; an id of 12 KB leaves nothing of its size behind.
    @Test func othersFailuresNeverRefuseTheRightSecret() throws {
        let server = try Self.server()
        let token = try server.login()["token"] as! String
        let form = "token=\(Self.encoded(token))"
        for address in 1...20 {
            for guess in 0..<5 {
                let answer = try Self.post(server, "/v1/introspect", form,
                                           headers: [Self.basic(Self.clientID, "guess-\(address)-\(guess)"), ("X-Forwarded-For", "203.0.113.\(address)")])
                #expect(answer.status == 401, "\(answer.status) \(answer.text)")
            }
        }
        let fresh = try Self.post(server, "/v1/introspect", form, headers: [Self.basic(), ("X-Forwarded-For", "192.0.2.200")])
        #expect(fresh.status == 200 && fresh.json["active"] as? Bool == true, "\(fresh.status) \(fresh.text)")
        let huge = String(repeating: "k", count: 12_000)
        for address in 1...3 {
            let answer = try Self.post(server, "/v1/revoke", form, headers: [Self.basic(huge, "x"), ("X-Forwarded-For", "198.18.0.\(address)")])
            #expect(answer.status == 401, "\(answer.status)")
        }
        #expect(try Self.post(server, "/v1/revoke", form, headers: [Self.basic(), ("X-Forwarded-For", "192.0.2.201")]).status == 200)
    }

    /// A client's revocation is reported like a logout: one `chain.revoked` webhook with reason
    /// `logout`, verified by a real receiver; revoking again sends nothing more.
    @Test func aClientsRevocationIsSentToWebhooksLikeALogout() throws {
        let (directory, secret) = try WebhookTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try WebhookReceiver(secretFile: secret, logPath: directory + "/received.log")
        defer { receiver.stop() }
        let server = try Self.server(["--webhook", receiver.url, "--webhook-secret-file", secret, "--webhook-backoff", "50ms"])
        let token = try server.login()["token"] as! String
        let form = "token=\(Self.encoded(token))"
        #expect(try Self.post(server, "/v1/revoke", form).status == 200)
        #expect(try Self.post(server, "/v1/revoke", form).status == 200)
        // A later event, to know every earlier one was sent (one instance sends in commit order).
        _ = try server.login("alice", device: "phone-2")
        let received = receiver.await { $0.contains { $0.type == "login.new_device" && $0.data["device_id"] == "phone-2" } }
        let revoked = received.filter { $0.type == "chain.revoked" }
        #expect(revoked.count == 1 && revoked.allSatisfy { $0.verified && $0.data["reason"] == "logout" }, "\(received)")
    }

    /// An expired token is only inactive, the same bytes as a forged one.
    @Test func anExpiredTokenIsOnlyInactive() throws {
        let server = try Self.server(["--token-ttl", "1s"])
        let token = try server.login()["token"] as! String
        #expect(try eventually(within: 10) { try server.request("GET", "/v1/verify", token: token).error == "token_expired" })
        #expect(try Self.post(server, "/v1/introspect", "token=\(Self.encoded(token))").text == #"{"active":false}"#)
    }

    @Test func badRequestsNameTheProblem() throws {
        let server = try Self.server()
        let json = try Self.post(server, "/v1/introspect", #"{"token":"x"}"#, contentType: "application/json")
        #expect(json.status == 415 && json.error == "unsupported_media_type" && json.text.contains("x-www-form-urlencoded"))
        let missing = try Self.post(server, "/v1/introspect", "token_type_hint=access_token")
        #expect(missing.status == 400 && missing.error == "invalid_request" && missing.text.contains("token parameter"))
        let twice = try Self.post(server, "/v1/revoke", "token=a&token=b")
        #expect(twice.status == 400 && twice.text.contains("more than once"))
        let escape = try Self.post(server, "/v1/introspect", "token=%zz")
        #expect(escape.status == 400 && escape.text.contains("percent-escape"))
        #expect(try server.request("GET", "/v1/introspect").status == 405)
    }

    @Test func revocationRevokesTheChainOnceAndAnswers200ForAnyToken() throws {
        let server = try Self.server()
        let bundle = try server.login()
        let token = bundle["token"] as! String
        let chain = bundle["chain_id"] as! String
        let next = try server.request("POST", "/v1/exchange", token: token).json["token"] as! String
        // The consumed token names the chain too: whoever shows it wants the session gone.
        let first = try Self.post(server, "/v1/revoke", "token=\(Self.encoded(token))&token_type_hint=refresh_token")
        #expect(first.status == 200 && first.body.isEmpty, "\(first.text)")
        #expect(try server.revocation(of: chain) == "logout")
        let verify = try server.request("GET", "/v1/verify", token: next)
        #expect(verify.status == 401 && verify.error == "chain_revoked")
        for candidate in [next, token, "not-a-token"] {
            #expect(try Self.post(server, "/v1/revoke", "token=\(Self.encoded(candidate))").status == 200)
        }
        let events = try server.auditEvents("chain_revoked")
        #expect(events.count == 1, "\(events)")
        let detail = events.first?["detail"] as? [String: Any]
        #expect(detail?["reason"] as? String == "logout" && (detail?["note"] as? String)?.contains("client kong") == true, "\(events)")
    }

    @Test(arguments: StoreBackend.allCases)
    func introspectionAndRevocationWorkOnEitherStore(_ backend: StoreBackend) async throws {
        let secrets = NSTemporaryDirectory() + "baton-e2e-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        try Self.secret.write(toFile: secrets + "/kong.secret", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secrets + "/kong.secret")
        let server = try await ServerProcess.start(on: backend, ["--introspection-client", "kong:\(secrets)/kong.secret"])
        let problems = try await offPool { () throws -> [String] in
            try server.addUser("alice")
            let bundle = try server.login()
            let token = bundle["token"] as! String
            let form = "token=\(Self.encoded(token))"
            var problems: [String] = []
            let active = try Self.post(server, "/v1/introspect", form)
            if active.json["active"] as? Bool != true || active.json["chain_id"] as? String != bundle["chain_id"] as? String {
                problems.append("introspect: \(active.text)")
            }
            if try server.request("GET", "/v1/verify", token: token).status != 200 { problems.append("verify after introspection") }
            for _ in 0..<2 where try Self.post(server, "/v1/revoke", form).status != 200 { problems.append("revoke") }
            let after = try server.request("GET", "/v1/verify", token: token)
            if after.error != "chain_revoked" || after.json["reason"] as? String != "logout" { problems.append("verify after revoke: \(after.text)") }
            if try Self.post(server, "/v1/introspect", form).text != #"{"active":false}"# { problems.append("introspect after revoke") }
            if try server.auditEvents("chain_revoked").count != 1 { problems.append("audit: \(try server.auditEvents("chain_revoked"))") }
            return problems
        }
        #expect(problems.isEmpty, "\(backend): \(problems)")
    }

    @Test func metadataDescribesWhatBatonOffers() throws {
        let server = try ServerProcess(["--public-url", "https://auth.example.com"])
        let answer = try server.request("GET", "/.well-known/oauth-authorization-server")
        let json = answer.json
        #expect(answer.status == 200 && json["issuer"] as? String == "https://auth.example.com", "\(answer.text)")
        #expect(json["introspection_endpoint"] as? String == "https://auth.example.com/v1/introspect")
        #expect(json["revocation_endpoint"] as? String == "https://auth.example.com/v1/revoke")
        #expect(json["introspection_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic"])
        #expect(json["revocation_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic"])
        #expect(json["dpop_signing_alg_values_supported"] as? [String] == ["ES256", "EdDSA"])
        #expect(json["response_types_supported"] as? [String] == [])
        #expect(answer.headers["cache-control"] == "max-age=300")
    }

    /// Without `--public-url` the issuer is whatever `Host` the request named: never cacheable,
    /// or a shared cache would hand the next clients endpoints on an attacker's host (where
    /// they would send their Basic credentials). Issue 43's observations.
    @Test func metadataFromTheHostHeaderIsNotCacheable() throws {
        let server = try ServerProcess()
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        let answer = try connection.readResponse()
        #expect(answer.status == 200 && answer.json["issuer"] as? String == "http://evil.example", "\(answer.text)")
        #expect(answer.headers["cache-control"] == "no-store")
    }

    @Test func aSecretFileOthersCanReadOrAMalformedClientIsRefusedAtStart() throws {
        let directory = NSTemporaryDirectory() + "baton-e2e-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/kong.secret"
        try Self.secret.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let db = directory + "/baton.db"
        let (status, _, err) = try runBaton(["serve", "--db", db, "--listen", "127.0.0.1:0", "--introspection-client", "kong:\(path)"])
        #expect(status == 1 && err.contains("introspection client secret file \(path) can be read by group or others; chmod 600 it"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: db), "a refused start leaves no database")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        try "short".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let (short, _, shortErr) = try runBaton(["serve", "--db", db, "--listen", "127.0.0.1:0", "--introspection-client", "kong:\(path)"])
        #expect(short == 1 && shortErr.contains("must hold one line of 32 to 512"), "\(shortErr)")
        // A file the service cannot read names the way out for the packaged unit (issue 43, finding 5).
        let (missing, _, missingErr) = try runBaton(["serve", "--db", db, "--listen", "127.0.0.1:0", "--introspection-client", "kong:\(directory)/absent.secret"])
        #expect(missing == 1 && missingErr.contains("cannot read introspection client secret file \(directory)/absent.secret")
                && missingErr.contains("LoadCredential=NAME:\(directory)/absent.secret") && missingErr.contains("ID:%d/NAME"), "\(missingErr)")
        let (usage, _, usageErr) = try runBaton(["serve", "--db", db, "--introspection-client", "no colon here"])
        #expect(usage == 64 && usageErr.contains("Invalid value 'no colon here' for '--introspection-client"), "\(usageErr)")
        let (rule, _, ruleErr) = try runBaton(["serve", "--db", db, "--authz-step-up", "/api/../x=300"])
        #expect(rule == 64 && ruleErr.contains("--authz-step-up"), "\(ruleErr)")
    }
}

import BatonCore
import Foundation
import Testing

/// Which method and URL a proof must name (`htm`, `htu`): `--public-url`, a trusted proxy's
/// forwarding headers, nginx `auth_request`'s `X-Original-Method`/`X-Original-URI` (trusted
/// proxies only); the webhook of a refused proof; the v5 → v6 migration on PostgreSQL.
@Suite(.serialized)
struct DPoPTargetTests {
    /// The default trusted proxies are loopback /32s: 127.0.0.1 is trusted, 127.0.0.2 is not.
    static let untrusted = "127.0.0.2"

    /// nginx `auth_request` sends verify a GET of `/v1/verify`, with the original request's
    /// method, URI and public origin in headers: from a trusted proxy the proof of the
    /// original request is checked against them; from anyone else they are ignored (a client
    /// cannot make a proof for one URL pass for another).
    @Test func verifyChecksTheOriginalRequestOnlyFromATrustedProxy() async throws {
        let server = try await ServerProcess.start(on: .sqlite)
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let token = try server.boundLogin(device)["token"] as! String
            let original = device.signer.proof(method: "POST", url: "https://api.example.com/orders?id=7", token: token, now: SystemClock().now())
            let headers: [(String, String)] = [
                ("Authorization", "DPoP " + token), ("DPoP", original), ("X-Original-Method", "POST"),
                ("X-Original-URI", "/orders?id=7"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "api.example.com"),
            ]
            let proxied = try server.request("GET", "/v1/verify", headers: headers)
            #expect(proxied.status == 200, "\(proxied.text)")
            let again = try server.request("GET", "/v1/verify", headers: headers)
            #expect(again.status == 401 && again.error == "invalid_dpop_proof")  // the same proof twice: a replay

            let fresh = device.signer.proof(method: "POST", url: "https://api.example.com/orders", token: token, now: SystemClock().now())
            let connection = try HTTPConnection(port: server.port, from: Self.untrusted)
            defer { connection.close() }
            let direct = try connection.request("GET", "/v1/verify", headers: [("DPoP", fresh)] + headers.filter { $0.0 != "DPoP" })
            #expect(direct.status == 401 && direct.error == "invalid_dpop_proof", "\(direct.text)")
        }
    }

    /// Traefik's `forwardAuth` names the original request only as `X-Forwarded-Method` and
    /// `X-Forwarded-Uri` (it cannot set a header to a request's value under another name):
    /// from a trusted proxy they stand for it as `X-Original-*` do, the `X-Original-*` names
    /// outrank them (nginx and Caddy set those on every proxied request, so a client's own
    /// `X-Forwarded-Uri` passed through is never read), and from anyone else both are ignored.
    @Test func verifyTakesTraefiksForwardedMethodAndURIOnlyFromATrustedProxyAndAfterXOriginal() async throws {
        let server = try await ServerProcess.start(on: .sqlite)
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let token = try server.boundLogin(device)["token"] as! String
            let forwarded: [(String, String)] = [("X-Forwarded-Method", "DELETE"), ("X-Forwarded-Uri", "/orders/7?x=1"),
                                                 ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "api.example.com")]
            func proof(_ method: String, _ url: String) -> String { device.signer.proof(method: method, url: url, token: token, now: SystemClock().now()) }
            func presented(_ proof: String) -> [(String, String)] { [("Authorization", "DPoP " + token), ("DPoP", proof)] }
            let proxied = try server.request("GET", "/v1/verify", headers: presented(proof("DELETE", "https://api.example.com/orders/7")) + forwarded)
            #expect(proxied.status == 200, "\(proxied.text)")
            // With X-Original-* beside them, X-Original-* name the request.
            let original = [("X-Original-Method", "GET"), ("X-Original-URI", "/orders")]
            let both = try server.request("GET", "/v1/verify", headers: presented(proof("DELETE", "https://api.example.com/orders/7")) + forwarded + original)
            #expect(both.status == 401 && both.error == "invalid_dpop_proof", "\(both.text)")
            #expect(try server.request("GET", "/v1/verify", headers: presented(proof("GET", "https://api.example.com/orders")) + forwarded + original).status == 200)
            // Not from a trusted proxy: verify's own request is what the proof must name.
            let connection = try HTTPConnection(port: server.port, from: Self.untrusted)
            defer { connection.close() }
            let direct = try connection.request("GET", "/v1/verify", headers: presented(proof("DELETE", "https://api.example.com/orders/7")) + forwarded)
            #expect(direct.status == 401 && direct.error == "invalid_dpop_proof", "\(direct.text)")
        }
    }

    /// Without `--public-url` and without a configured gateway (`--trusted-proxy`), a proof's
    /// origin is the `Host` the client sent: the start says so on stderr, naming the flag, once;
    /// with either (or with DPoP off) it says nothing.
    @Test func hostAsProofOriginIsWarnedAboutAtStart() throws {
        let warning = "Warning: DPoP proofs are checked against the origin the request names (its Host, or X-Forwarded-Host from the "
            + "default trusted proxies on loopback), since neither --public-url nor --trusted-proxy is given: expected for a trial "
            + "on this machine; in a deployment set --public-url https://<your host> (BATON_PUBLIC_URL), or --dpop off.\n"
        let bare = try ServerProcess()
        #expect(bare.stderr == warning)
        #expect(try ServerProcess(environment: ["BATON_DPOP": "required"]).stderr == warning)
        for quiet in [["--public-url", "https://auth.bank.internal"], ["--trusted-proxy", "127.0.0.1/32"], ["--dpop", "off"]] {
            let server = try ServerProcess(quiet)
            #expect(server.stderr.isEmpty, "\(quiet): \(server.stderr)")
        }
    }

    /// The package's /etc/default/baton ships `BATON_PUBLIC_URL=https://auth.example.com`: a
    /// start with that (or any name reserved for examples) says so on stderr, and still starts.
    @Test func aReservedExampleDomainAsPublicURLIsWarnedAboutAtStart() throws {
        let server = try ServerProcess([], environment: ["BATON_PUBLIC_URL": "https://auth.example.com"])
        #expect(server.stderr.hasPrefix("Warning: --public-url (BATON_PUBLIC_URL) is https://auth.example.com, a domain reserved for examples"),
                "\(server.stderr)")
        #expect(try server.request("GET", "/healthz").status == 200)
    }

    /// `--public-url`: the proofs name it, whatever Host or the forwarding headers say.
    @Test func publicURLIsTheOriginProofsName() async throws {
        let server = try await ServerProcess.start(on: .sqlite, ["--public-url", "HTTPS://Auth.Example.com:443/"])
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let login = try server.request("POST", "/v1/login", headers: [("DPoP", device.signer.proof(method: "POST", url: "https://auth.example.com/v1/login", now: SystemClock().now()))],
                                           json: ServerProcess.loginJSON)
            #expect(login.status == 200 && login.json["token_type"] as? String == "DPoP", "\(login.text)")
            let token = login.json["token"] as! String
            let local = try server.dpop("GET", "/v1/verify", token: token, device: device)  // htu http://127.0.0.1/...
            #expect(local.status == 401 && local.error == "invalid_dpop_proof")
            let proof = device.signer.proof(method: "GET", url: "https://auth.example.com/v1/verify", token: token, now: SystemClock().now())
            #expect(try server.request("GET", "/v1/verify", headers: [("Authorization", "DPoP " + token), ("DPoP", proof)]).status == 200)
        }
        let (status, _, err) = try runBaton(["serve", "--public-url", "https://auth.example.com/prefix", "--listen", "127.0.0.1:0"])
        #expect(status != 0 && err.contains("--public-url"), "\(err)")
    }

    /// A refused proof on a bound chain is reported to webhooks as `device.proof_rejected`,
    /// written by the same transaction as its audit event (off the request path, issue 28).
    @Test(arguments: StoreBackend.allCases)
    func aRefusedProofIsReportedAsAWebhookEvent(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool {
            try server.addUser("alice")
            let token = try server.boundLogin(Device())["token"] as! String
            #expect(try server.request("POST", "/v1/exchange", token: token, headers: [("User-Agent", "Thief/1")]).status == 401)
            let query = "SELECT body FROM webhook_outbox WHERE type = 'device.proof_rejected'"
            #expect(try eventually { try queryDatabase(query, at: server.databasePath).count == 1 })
            let rows = try queryDatabase(query, at: server.databasePath)
            let body = rows.first?.first ?? ""
            #expect(body.contains(#""failure":"bearer_for_bound_chain""#) && body.contains(#""user_agent":"Thief/1""#) && !body.contains(token), "\(body)")
        }
    }

    /// A version-5 PostgreSQL database (Tests/Fixtures/schema-postgresql-v5.sql) is migrated by
    /// the first command that opens it: version 12 (6 added these), every chain unbound, `proof_failed` accepted.
    @Test func version5PostgresDatabaseGetsTheKeyBindingColumn() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let result = try await offPool { () throws -> [String] in
            let stats = try migrateOlderPostgres(version: 5, uri: uri)
            let psql = try PostgresBinaries.find()
            _ = try psql.psql("INSERT INTO audit (at, kind) VALUES (1, 'proof_failed')", uri: uri)
            let tooShort = (try? psql.psql("UPDATE chains SET jkt = 'short' WHERE id = 7", uri: uri)) == nil ? "refused" : "accepted"
            return [stats, try psql.psql("SELECT version FROM baton_schema", uri: uri),
                    try psql.psql("SELECT id || '|' || coalesce(jkt, 'NULL') FROM chains", uri: uri), tooShort,
                    try psql.psql("SELECT count(*) FROM proof_replays", uri: uri)]
        }
        #expect(result == ["0", "12", "7|NULL", "refused", "0"])
    }
}

@testable import BatonCore
@testable import BatonStore
import Foundation
import Synchronization
import Testing

/// The gateway matrix (docs/deploy.md, "The gateway matrix"): the same guarantees, proven
/// the same way, through every shipped gateway running its files as shipped (nginx, Caddy,
/// Traefik, HAProxy). A bound (DPoP) chain through each: GatewayDPoPTests. Each test case has
/// its own Baton, application and gateway (own ports, own rate tables), so the cases run in
/// parallel.
@Suite
struct GatewayMatrixTests {
    /// Baton, the echo application, and `kind` in front of both. Clients come from loopback
    /// addresses other than 127.0.0.1, which the gateway connects from (the trusted proxy).
    final class Bed {
        let baton: ServerProcess
        let app: EchoApplication
        let gateway: any GatewayProcess

        init(_ kind: GatewayKind) throws {
            baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
            try baton.addUser("alice")
            app = try EchoApplication()
            gateway = try kind.start(batonPort: baton.port, appPort: app.port)
        }

        func request(_ method: String, _ path: String, from source: String = "127.0.0.5", token: String? = nil,
                     headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
            try gateway.request(method, path, from: source, token: token, headers: headers, json: json)
        }

        func login() throws -> (token: String, chain: String) {
            let response = try request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
            guard response.status == 200, let token = response.json["token"] as? String, let chain = response.json["chain_id"] as? String else {
                throw ServerProcess.ServerError.didNotStart("login through the gateway: \(response.status) \(response.text)")
            }
            return (token, chain)
        }
    }

    /// What a client forges (NginxSpoofingTests.spoofed), and names that an application
    /// mapping header names to variables (CGI, WSGI, PHP) reads as Baton's identity headers.
    static let spoofed = NginxSpoofingTests.spoofed + [("X-Forwarded-Method", "PUT"), ("X-Forwarded-Uri", "/api/other")]
    static let aliases: [(String, String)] = [("X_Baton_User_Id", "999"), ("X.Baton.Username", "mallory"), ("X-Baton_Chain-Id", "00000000000000ff")]

    /// Issue 42, F3: a 401 is marked as Baton's (`X-Baton-Refused: true`) when Baton or the
    /// gateway on its behalf refuses, and never when the application answers one, even one
    /// copying Baton's body, challenge and mark.
    @Test(arguments: GatewayKind.available)
    func onlyBatonsRefusalsCarryBatonsMark(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, _) = try bed.login()
        let own = try bed.request("POST", EchoApplication.ownUnauthorizedPath, token: token, json: #"{"code":"123456"}"#)
        #expect(own.status == 401 && own.error == "session_expired", "\(kind): \(own.status) \(own.text)")
        #expect(own.headers["x-baton-refused"] == nil, "\(kind): the app's 401 reached the client marked as Baton's")
        let forged = "bt1_" + String(repeating: "A", count: 86)
        for path in ["/api/orders", "/api/transfer/42", "/v1/verify"] {
            let refused = try bed.request("GET", path, token: forged)
            #expect(refused.status == 401 && refused.error == "token_invalid" && refused.headers["x-baton-refused"] == "true",
                    "\(kind) \(path): \(refused.status) \(refused.headers) \(refused.text)")
        }
        let missing = try bed.request("GET", "/api/orders")
        #expect(missing.status == 401 && missing.headers["x-baton-refused"] == "true", "\(kind) no token: \(missing.headers)")
    }

    /// One gateway surface (issue 43; docs/deploy.md, "What the gateway exposes"): each row
    /// of the table through each live gateway running its shipped files. Public rows reach
    /// Baton (its own answer comes back); internal ones are 404 at the gateway; every answer
    /// carries HSTS.
    @Test(arguments: GatewayKind.available)
    func everyGatewayExposesTheDocumentedSurface(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, _) = try bed.login()
        var answers: [(String, HTTPConnection.Response)] = []
        func row(_ method: String, _ path: String, token: String? = nil, json: String? = nil) throws -> HTTPConnection.Response {
            let response = try bed.request(method, path, token: token, json: json)
            answers.append(("\(method) \(path)", response))
            return response
        }
        // Public: Baton's answer comes back.
        let metadata = try row("GET", "/.well-known/oauth-authorization-server")
        #expect(metadata.status == 200 && metadata.json["issuer"] is String, "\(kind) metadata: \(metadata.status) \(metadata.text)")
        for path in ["/v1/introspect", "/v1/revoke"] {
            let refused = try bed.request("POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")])
            answers.append(("POST \(path)", refused))
            #expect(refused.status == 401 && refused.error == "invalid_client", "\(kind) \(path): \(refused.status) \(refused.text)")
        }
        let sessions = try row("GET", "/v1/sessions", token: token)
        #expect(sessions.status == 200 && sessions.json["sessions"] != nil, "\(kind) sessions: \(sessions.status) \(sessions.text)")
        #expect(try row("GET", "/v1/verify", token: token).status == 200, "\(kind) verify")
        let health = try row("GET", "/healthz")
        #expect(health.status == 200 && health.json["status"] as? String == "ok", "\(kind) healthz: \(health.text)")
        #expect(try row("POST", "/v1/exchange", json: "{}").status == 401, "\(kind) exchange without a token: Baton's 401")
        let password = try row("POST", "/v1/password", token: token, json: #"{"current_password":"wrong","new_password":"a new long password 1"}"#)
        #expect(password.status != 404 && password.error != nil && password.error != "not_found", "\(kind) password: \(password.status) \(password.text)")
        let others = try row("POST", "/v1/sessions/revoke-others", token: token, json: "{}")
        #expect(others.status == 200, "\(kind) revoke-others: \(others.status) \(others.text)")
        // Internal: never through the gateway.
        for path in ["/v1/authz", "/v1/authz/api/orders", "/v1/authz/v1/login", "/readyz", "/metrics", "/v1/nope", "/admin", "/"] {
            let hidden = try row("GET", path, token: token)
            #expect(hidden.status == 404, "\(kind) \(path): \(hidden.status) \(hidden.text)")
        }
        // Every answer, Baton's, the application's and the gateway's own: HSTS.
        answers.append(("GET /api/orders", try bed.request("GET", "/api/orders", token: token)))
        answers.append(("GET /api/orders (no token)", try bed.request("GET", "/api/orders")))
        answers.append(("GET /api/../x", try bed.request("GET", "/api/../x")))
        for (what, response) in answers {
            #expect(response.headers["strict-transport-security"] == "max-age=63072000", "\(kind) \(what): \(response.status) \(response.headers)")
        }
    }

    @Test(arguments: GatewayKind.available)
    func identityReachesTheApplicationAndNeitherSpoofedHeadersNorTheTokenDo(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, chain) = try bed.login()
        for (path, critical) in [("/api/orders?page=2", false), ("/api/transfer/42", true)] {
            let response = try bed.request("GET", path, token: token, headers: Self.spoofed)
            #expect(response.status == 200, "\(kind) \(path): \(response.status) \(response.text)")
            let echo = response.json
            let what = "\(kind) \(path): \(echo)"
            // The identity Baton vouched for, and nothing else under Baton's names.
            #expect(echo["x-baton-user-id"] as? String == "1" && echo["x-baton-username"] as? String == "alice", "\(what)")
            #expect(echo["x-baton-chain-id"] as? String == chain, "\(what)")
            let time = (echo["x-baton-auth-time"] as? String).flatMap { Int64($0) }
            // The auth time reaches a critical location (Traefik copies it to every one: Baton's own value).
            #expect(critical || kind == .traefik ? time.map { $0 < 9_999_999_999 } == true : echo["x-baton-auth-time"] == nil, "\(what)")
            let batonNames = Set(echo.keys.filter { EchoApplication.aliasesBatonHeader($0) })
            #expect(batonNames.isSubset(of: ["x-baton-user-id", "x-baton-username", "x-baton-chain-id", "x-baton-auth-time"]), "\(what)")
            // Where the client is, as the gateway saw it; never what it claimed.
            #expect(echo["x-forwarded-for"] as? String == "127.0.0.5" && echo["x-real-ip"] as? String == "127.0.0.5", "\(what)")
            #expect(echo["x-forwarded-proto"] as? String == "http" && echo["forwarded"] == nil, "\(what)")
            #expect((echo["x-forwarded-host"] as? String)?.hasPrefix("127.0.0.1") == true, "\(what)")
            #expect(echo["x-forwarded-port"] == nil || echo["x-forwarded-port"] as? String != "8443", "\(what)")
            // Which request was made: absent, or the true one.
            for name in ["x-original-method", "x-forwarded-method"] { #expect(echo[name] == nil || echo[name] as? String == "GET", "\(what)") }
            for name in ["x-original-uri", "x-forwarded-uri"] { #expect(echo[name] == nil || echo[name] as? String == path, "\(what)") }
            // The app gets the identity, not the token.
            #expect(echo["authorization"] == nil && echo["dpop"] == nil && echo["path"] as? String == path, "\(what)")
        }
    }

    /// `X_Baton_User_Id` is `X-Baton-User-Id` to a CGI, WSGI or PHP application. nginx drops
    /// such names (`ignore_invalid_headers`), Traefik by `aliasHeadersStrategy: delete`, HAProxy
    /// by the shipped `del-header` pattern, Caddy by the shipped `request_header -X_Baton*`
    /// and `-X.Baton*` (Caddy 2.6 passed them on before those lines).
    @Test(arguments: GatewayKind.available)
    func aliasesOfTheIdentityHeadersNeverReachTheApplication(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, _) = try bed.login()
        for path in ["/api/orders", "/api/transfer/42"] {
            let response = try bed.request("GET", path, token: token, headers: Self.aliases)
            #expect(response.status == 200, "\(kind) \(path): \(response.status) \(response.text)")
            let names = response.json.keys.filter { EchoApplication.aliasesBatonHeader($0) && !$0.hasPrefix("x-baton-") }
            #expect(names.isEmpty, "\(kind) \(path): \(response.json)")
            #expect(response.json["x-baton-user-id"] as? String == "1", "\(kind) \(path): \(response.json)")
        }
    }

    @Test(arguments: GatewayKind.available)
    func verifysRefusalReachesTheClientWithItsBodyAndChallenge(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (first, _) = try bed.login()
        #expect(try bed.request("POST", "/v1/exchange", token: first).status == 200)
        let superseded = try bed.request("GET", "/api/orders", token: first)
        #expect(superseded.status == 401 && superseded.error == "token_superseded", "\(kind): \(superseded.status) \(superseded.text)")
        #expect(superseded.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#, "\(kind): \(superseded.headers)")
        #expect(superseded.headers["content-type"] == "application/json", "\(kind)")
        let missing = try bed.request("GET", "/api/orders")
        #expect(missing.status == 401 && missing.error == "token_missing" && missing.headers["www-authenticate"] == #"Bearer realm="baton""#, "\(kind)")
        let forged = try bed.request("GET", "/api/transfer/1", token: "bt1_" + String(repeating: "A", count: 80))
        #expect(forged.status == 401 && forged.error == "token_invalid", "\(kind): \(forged.text)")
    }

    @Test(arguments: GatewayKind.available)
    func spoofedForwardedForIsNotAudited(_ kind: GatewayKind) throws {
        // A replaced sibling presented at /api/ revokes the chain (fork_detected), audited with
        // the presenter's address, not the one it claimed.
        let bed = try Bed(kind)
        let (first, _) = try bed.login()
        let phone = [("X-Device-Id", "phone-1")]
        let lost = try bed.request("POST", "/v1/exchange", token: first, headers: phone)
        #expect(try bed.request("POST", "/v1/exchange", token: first, headers: phone).status == 200)
        let fork = try bed.request("GET", "/api/orders", from: "127.0.0.6", token: try #require(lost.json["token"] as? String), headers: Self.spoofed)
        #expect(fork.status == 401 && fork.json["reason"] as? String == "fork_detected", "\(kind): \(fork.text)")
        let connection = try Connection(path: bed.baton.databasePath)
        defer { connection.close() }
        let ips = try connection.statement("SELECT kind, ip FROM audit WHERE kind IN ('exchanged', 'exchange_retried', 'fork_detected', 'chain_revoked') ORDER BY id")
            .all { "\($0.text(0)) \($0.text(1))" }
        #expect(ips == ["exchanged 127.0.0.5", "exchange_retried 127.0.0.5", "fork_detected 127.0.0.6", "chain_revoked 127.0.0.6"], "\(kind)")
    }

    @Test(arguments: GatewayKind.available)
    func criticalLocationChallengesAnOldAuthenticationUntilTheUserConfirms(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, chain) = try bed.login()
        try bed.baton.ageAuthentication(ofChain: chain, by: 301)
        let refused = try bed.request("GET", "/api/transfer/42", token: token)
        #expect(refused.status == 401 && refused.error == "insufficient_user_authentication" && refused.json["max_age"] as? Int == 300, "\(kind): \(refused.text)")
        #expect(refused.headers["www-authenticate"] == StepUpEndpointTests.challenge(300), "\(kind)")
        #expect(try bed.request("GET", "/api/orders", token: token).status == 200)
        let confirmed = try bed.request("POST", "/v1/confirm", token: token, json: #"{"password":"correct horse battery"}"#)
        #expect(confirmed.status == 200, "\(kind): \(confirmed.text)")
        let accepted = try bed.request("GET", "/api/transfer/42", token: token)
        let authTime = try #require((confirmed.json["auth_time"] as? String).flatMap(RFC3339.parse))
        #expect(accepted.status == 200 && accepted.json["x-baton-auth-time"] as? String == String(authTime.epochSeconds), "\(kind): \(accepted.text)")
    }

    /// The step-up rule cannot be bypassed by another spelling of the protected path: dot
    /// segments, percent-encoding, letter case, `;` and `.` suffixes, doubled slashes. Each
    /// gateway either refuses the path (400: nginx, Caddy and HAProxy refuse every path not in
    /// normal form; Traefik the encoded slash, backslash and NUL), or challenges it, or passes
    /// a path to the application that is not under the protected prefix once normalized
    /// (Traefik cleans dot segments and passes the cleaned path on).
    @Test(arguments: GatewayKind.available)
    func stepUpPathRulesCannotBeBypassedByAnotherSpellingOfThePath(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let (token, chain) = try bed.login()
        try bed.baton.ageAuthentication(ofChain: chain, by: 301)
        for path in NginxStepUpTests.unnormalizedPaths + ["/api/transfer/42%00", "/api/%2e%2e/api/transfer/1"] + GatewayServletTests.parameterSpellings + GatewayServletTests.doubleEncodings {
            let response = try bed.request("GET", path, token: token)
            let what = "\(kind) \(path): \(response.status) \(response.text)"
            switch response.status {
            case 400: #expect(response.json["path"] == nil, "\(what)")
            case 401: #expect(response.error == "insufficient_user_authentication", "\(what)")
            case 200:
                let received = try #require(response.json["path"] as? String, "\(what)")
                #expect(!Self.isCritical(received), "\(what)")
            default: Issue.record("\(what)")
            }
            if kind != .traefik {  // refused in Baton's shape
                #expect(response.status == 400 && response.error == "invalid_request" || path.hasSuffix("%00") && kind == .nginx, "\(what)")
            }
        }
        for path in NginxStepUpTests.transferPathVariants {
            let refused = try bed.request("GET", path, token: token)
            #expect(refused.status == 401 && refused.error == "insufficient_user_authentication", "\(kind) \(path): \(refused.status) \(refused.text)")
        }
        // Not the protected prefix: the plain check. A query may hold anything (only the path is
        // checked), and it is not verify's: a client's max_age does not reach Baton.
        for path in ["/api/transfers", "/api/transferx/1", "/api/orders/transfer/1", "/api/orders?next=/a/../b%2f", "/api/orders?max_age=1"] {
            let response = try bed.request("GET", path, token: token)
            #expect(response.status == 200 && response.json["path"] as? String == path, "\(kind) \(path): \(response.status) \(response.text)")
        }
    }

    /// Whether the application, routing on `path` as a servlet container does (`;` path
    /// parameters dropped from every segment, even when nothing is left of it; percent-decoded
    /// once, and again, as an app that decodes twice; dot segments resolved; empty segments
    /// dropped; any letter case), would take it for the protected prefix. (This model used to
    /// keep a segment's parameter when the segment was only a parameter, `/api/;x/transfer`,
    /// and so missed issue 43's finding 2; GatewayServletTests asks a real Tomcat.)
    static func isCritical(_ path: String) -> Bool {
        let raw = String(path.prefix { $0 != "?" })
        let withoutParameters = raw.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.prefix { $0 != ";" } }.joined(separator: "/")
        let once = withoutParameters.removingPercentEncoding ?? withoutParameters
        let decoded = (once.removingPercentEncoding ?? once).lowercased().replacingOccurrences(of: "\\", with: "/")
        var segments: [Substring] = []
        for segment in decoded.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        guard segments.count >= 2, segments[0] == "api" else { return false }
        let name = segments[1]
        return name == "transfer" || name.hasPrefix("transfer.")
    }

    /// The login through an identity provider is a login to the limiters (issue 46): a flood of
    /// token exchanges from one address is cut off with 429, and another address still reaches
    /// Baton (whose answer here is 415: the gateways' test client sends JSON, and the refusal is
    /// Baton's own, so the request went through).
    @Test(arguments: GatewayKind.available.filter { $0 != .caddy })
    func aTokenExchangeFloodFromOneAddressHitsTheLoginLimit(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        let first = try bed.request("POST", "/v1/token-exchange", from: "127.0.0.9", token: nil, json: "{}")
        #expect(first.status == 415, "\(kind): the route reaches Baton: \(first.status) \(first.text)")
        let seen = Self.floodUntilLimited(bed, "/v1/token-exchange", from: "127.0.0.9", token: nil, json: "{}", perThread: 500)
        #expect(seen[429, default: 0] > 0 && Set(seen.keys).isSubset(of: [415, 429]), "\(kind): \(seen)")
        #expect(try bed.request("POST", "/v1/token-exchange", from: "127.0.0.10", token: nil, json: "{}").status == 415, "\(kind)")
    }

    /// Per-address limits where the gateway has a limiter (nginx, Traefik, HAProxy; stock
    /// Caddy has none): a flood of logouts from one address is cut off with 429, the honest
    /// first requests pass, and another address keeps its budget. (Logout: the smallest
    /// limit of the app-facing ones, 10 r/s with bursts of 50, or 150 in 10 s behind HAProxy.)
    @Test(arguments: GatewayKind.available.filter { $0 != .caddy })
    func aFloodFromOneAddressIsCutOffAndAnotherAddressKeepsItsBudget(_ kind: GatewayKind) throws {
        let bed = try Bed(kind)
        for _ in 0..<20 {
            let honest = try bed.request("POST", "/v1/logout", from: "127.0.0.7", token: "not-a-token")
            #expect(honest.status == 401, "\(kind): \(honest.status) \(honest.text)")
        }
        // Until the limiter answers (a slow machine sends fewer requests a second), at most 4,000.
        let seen = Self.floodUntilLimited(bed, "/v1/logout", from: "127.0.0.7", token: "not-a-token", json: nil, perThread: 1_000)
        #expect(seen[429, default: 0] > 0 && Set(seen.keys).isSubset(of: [401, 429]), "\(kind): \(seen)")
        #expect(try bed.request("POST", "/v1/logout", from: "127.0.0.8", token: "not-a-token").status == 401, "\(kind)")
    }

    /// POSTs to `path` from `source` on 4 threads, at most `perThread` requests each, until the
    /// gateway answers 429; the statuses seen, counted.
    static func floodUntilLimited(_ bed: Bed, _ path: String, from source: String, token: String?, json: String?,
                                  perThread: Int) -> [Int: Int] {
        let statuses = Mutex<[Int: Int]>([:])
        let gateway = bed.gateway
        race(threads: 4) { _ in
            for _ in 0..<perThread {
                let response = try? gateway.request("POST", path, from: source, token: token, headers: [], json: json)
                let limited = statuses.withLock { statuses in
                    statuses[response?.status ?? 0, default: 0] += 1
                    return statuses[429] != nil
                }
                if limited { break }
            }
        }
        return statuses.withLock { $0 }
    }
}

@testable import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Baton behind a live Caddy running deploy/caddy/Caddyfile as shipped: the same guarantees as
/// the nginx files (NginxTests, NginxSpoofingTests, NginxStepUpTests), rate limits apart.
@Suite(.serialized, .enabled(if: caddyBinary != nil, "needs Debian's caddy (./scripts/test installs it)"))
struct CaddyTests {
    let baton: ServerProcess
    let app: EchoApplication
    let caddy: CaddyProcess

    init() throws {
        // Caddy connects from 127.0.0.1; clients come from other loopback addresses.
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        app = try EchoApplication()
        caddy = try CaddyProcess(batonPort: baton.port, appPort: app.port)
    }

    func login(from source: String = "127.0.0.5") throws -> (token: String, chain: String) {
        let response = try caddy.request("POST", "/v1/login", from: source,
                                         json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
        #expect(response.status == 200, "\(response.text)")
        return (response.json["token"] as! String, response.json["chain_id"] as! String)
    }

    @Test func identityReachesTheApplicationAndSpoofedHeadersDoNot() throws {
        let (token, chain) = try login()
        let spoofed = NginxSpoofingTests.spoofed + [("X-Baton-Anything", "forged")]
        for (path, authTime) in [("/api/orders", false), ("/api/transfer/42", true)] {
            let response = try caddy.request("GET", path, from: "127.0.0.5", token: token, headers: spoofed)
            #expect(response.status == 200, "\(path): \(response.text)")
            let echo = response.json
            #expect(echo["x-forwarded-for"] as? String == "127.0.0.5", "\(path): \(echo)")
            #expect(echo["x-real-ip"] as? String == "127.0.0.5", "\(path): \(echo)")
            #expect(echo["x-forwarded-proto"] as? String == "http", "\(path): \(echo)")
            #expect(echo["x-forwarded-host"] as? String == "127.0.0.1", "\(path): \(echo)")
            #expect(echo["x-forwarded-port"] == nil && echo["forwarded"] == nil, "\(path): \(echo)")
            #expect(echo["x-forwarded-method"] == nil && echo["x-forwarded-uri"] == nil, "\(path): \(echo)")  // forward_auth's, to Baton only
            #expect(echo["x-original-method"] == nil && echo["x-original-uri"] == nil, "\(path): \(echo)")  // likewise
            #expect(echo["host"] as? String == "127.0.0.1" && echo["connection"] == nil, "\(path): \(echo)")
            #expect(echo["x-baton-user-id"] as? String == "1" && echo["x-baton-username"] as? String == "alice", "\(path): \(echo)")
            #expect(echo["x-baton-chain-id"] as? String == chain, "\(path): \(echo)")
            #expect(echo["x-baton-error"] == nil && echo["x-baton-anything"] == nil, "\(path): \(echo)")
            let time = (echo["x-baton-auth-time"] as? String).flatMap { Int64($0) }
            #expect(authTime ? time.map { $0 < 9_999_999_999 } == true : echo["x-baton-auth-time"] == nil, "\(path): \(echo)")
            #expect(echo["authorization"] == nil && echo["path"] as? String == path, "\(path): \(echo)")
        }
    }

    @Test func spoofedForwardedForIsNotAudited() throws {
        // A replaced sibling presented at /api/ revokes the chain (fork_detected), audited with
        // the presenter's address.
        let (first, _) = try login()
        let phone = [("X-Device-Id", "phone-1")]
        let lost = try caddy.request("POST", "/v1/exchange", from: "127.0.0.5", token: first, headers: phone)
        #expect(try caddy.request("POST", "/v1/exchange", from: "127.0.0.5", token: first, headers: phone).status == 200)
        let fork = try caddy.request("GET", "/api/orders", from: "127.0.0.6", token: try #require(lost.json["token"] as? String),
                                     headers: NginxSpoofingTests.spoofed)
        #expect(fork.status == 401 && fork.json["reason"] as? String == "fork_detected", "\(fork.text)")
        let connection = try Connection(path: baton.databasePath)
        defer { connection.close() }
        let ips = try connection.statement("SELECT kind, ip FROM audit WHERE kind IN ('exchanged', 'exchange_retried', 'fork_detected', 'chain_revoked') ORDER BY id").all { "\($0.text(0)) \($0.text(1))" }
        #expect(ips == ["exchanged 127.0.0.5", "exchange_retried 127.0.0.5", "fork_detected 127.0.0.6", "chain_revoked 127.0.0.6"])
    }

    @Test func verifysRefusalReachesTheClientWithItsBodyAndChallenge() throws {
        let (first, _) = try login()
        #expect(try caddy.request("POST", "/v1/exchange", from: "127.0.0.5", token: first).status == 200)
        let superseded = try caddy.request("GET", "/api/orders", from: "127.0.0.5", token: first)
        #expect(superseded.status == 401 && superseded.error == "token_superseded")
        #expect(superseded.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#)
        #expect(superseded.headers["content-type"] == "application/json")
        let missing = try caddy.request("GET", "/api/orders", from: "127.0.0.5")
        #expect(missing.status == 401 && missing.error == "token_missing" && missing.headers["www-authenticate"] == #"Bearer realm="baton""#)
        let forged = try caddy.request("GET", "/api/transfer/1", from: "127.0.0.5", token: "bt1_" + String(repeating: "A", count: 80))
        #expect(forged.status == 401 && forged.error == "token_invalid")
    }

    @Test func criticalLocationChallengesAnOldAuthenticationUntilTheUserConfirms() throws {
        let (token, chain) = try login()
        try baton.ageAuthentication(ofChain: chain, by: 301)
        let refused = try caddy.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token)
        #expect(refused.status == 401 && refused.error == "insufficient_user_authentication" && refused.json["max_age"] as? Int == 300)
        #expect(refused.headers["www-authenticate"] == StepUpEndpointTests.challenge(300))
        #expect(try caddy.request("GET", "/api/orders", from: "127.0.0.5", token: token).status == 200)
        let confirmed = try caddy.request("POST", "/v1/confirm", from: "127.0.0.5", token: token, json: #"{"password":"correct horse battery"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let accepted = try caddy.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token)
        let authTime = try #require((confirmed.json["auth_time"] as? String).flatMap(RFC3339.parse))
        #expect(accepted.status == 200 && accepted.json["x-baton-auth-time"] as? String == String(authTime.epochSeconds))
    }

    @Test func unnormalizedPathsAreRefusedAndEverySpellingOfTheProtectedPrefixGetsTheStepUpCheck() throws {
        let (token, chain) = try login()
        try baton.ageAuthentication(ofChain: chain, by: 301)
        for path in NginxStepUpTests.unnormalizedPaths + ["/api/transfer/42%00"] {
            let response = try caddy.request("GET", path, from: "127.0.0.5", token: token)
            #expect(response.status == 400 && response.error == "invalid_request", "\(path): \(response.status) \(response.text)")
            #expect(response.headers["content-type"] == "application/json" && response.json["path"] == nil, "\(path)")
        }
        for path in NginxStepUpTests.transferPathVariants {
            let refused = try caddy.request("GET", path, from: "127.0.0.5", token: token)
            #expect(refused.status == 401 && refused.error == "insufficient_user_authentication", "\(path): \(refused.status) \(refused.text)")
        }
        // Not the protected prefix: the plain check. A query may hold anything (only the path is
        // checked), and it is not verify's: a client's max_age does not reach Baton.
        for path in ["/api/transfers", "/api/transferx/1", "/api/orders/transfer/1", "/api/orders?next=/a/../b%2f", "/api/orders?max_age=1"] {
            #expect(try caddy.request("GET", path, from: "127.0.0.5", token: token).status == 200, "\(path)")
        }
    }

    @Test func errorsCaddyProducesAnswerInBatonsShape() throws {
        let body = "{\"username\":\"" + String(repeating: "a", count: 20 * 1024) + "\"}"
        let tooLarge = try caddy.request("POST", "/v1/login", from: "127.0.0.9", json: body)
        #expect(tooLarge.status == 413 && tooLarge.error == "payload_too_large", "\(tooLarge.status) \(tooLarge.text)")
        #expect(tooLarge.headers["content-type"] == "application/json")
        #expect(baton.stop() == 0)
        let down = try caddy.request("GET", "/api/orders", from: "127.0.0.9", token: "x")
        #expect(down.status == 503 && down.error == "unavailable" && down.headers["retry-after"] == "1", "\(down.status) \(down.text)")
        #expect(down.headers["content-type"] == "application/json")
    }
}

@testable import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// The shipped critical-operation location (`/api/transfer/`, verify with max_age=300) in a
/// live nginx: RFC 9470's challenge for an old authentication, passage after /v1/confirm.
@Suite(.serialized)
struct NginxStepUpTests {
    let baton: ServerProcess
    let app: EchoApplication
    let nginx: NginxProcess

    init() throws {
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        app = try EchoApplication()
        nginx = try NginxProcess(batonPort: baton.port, appPort: app.port)
    }

    func login(device: String = "phone-1") throws -> (token: String, chain: String) {
        let response = try nginx.request("POST", "/v1/login", from: "127.0.0.5",
                                         json: #"{"username":"alice","password":"correct horse battery","device_id":"\#(device)"}"#)
        #expect(response.status == 200, "\(response.text)")
        return (response.json["token"] as! String, response.json["chain_id"] as! String)
    }

    func age(_ chain: String, by seconds: Int64) throws { try baton.ageAuthentication(ofChain: chain, by: seconds) }

    @Test func criticalLocationChallengesAnOldAuthenticationUntilTheUserConfirms() throws {
        let (token, chain) = try login()
        let fresh = try nginx.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token)
        #expect(fresh.status == 200 && fresh.json["path"] as? String == "/api/transfer/42")
        #expect(Int64(fresh.json["x-baton-auth-time"] as? String ?? "") != nil)
        #expect(fresh.json["authorization"] == nil)

        try age(chain, by: 301)
        let refused = try nginx.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token)
        #expect(refused.status == 401)
        #expect(refused.headers["www-authenticate"] == StepUpEndpointTests.challenge(300))
        #expect(refused.headers["content-type"] == "application/json")
        #expect(refused.error == "insufficient_user_authentication" && refused.json["max_age"] as? Int == 300)
        // An ordinary location does not care how old the authentication is.
        #expect(try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: token).status == 200)

        let confirmed = try nginx.request("POST", "/v1/confirm", from: "127.0.0.5", token: token, json: #"{"password":"correct horse battery"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let accepted = try nginx.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token)  // the same token
        #expect(accepted.status == 200)
        let authTime = try #require((confirmed.json["auth_time"] as? String).flatMap(RFC3339.parse))
        #expect(accepted.json["x-baton-auth-time"] as? String == String(authTime.epochSeconds))
    }

    @Test func criticalLocationKeepsVerifysOtherAnswersAhead() throws {
        let (first, chain) = try login()
        try age(chain, by: 3600)
        _ = try nginx.request("POST", "/v1/exchange", from: "127.0.0.5", token: first)
        // token_superseded outranks insufficient_user_authentication: exchange first, not confirm.
        let superseded = try nginx.request("GET", "/api/transfer/1", from: "127.0.0.5", token: first)
        #expect(superseded.status == 401 && superseded.error == "token_superseded")
        #expect(superseded.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#)
        let missing = try nginx.request("GET", "/api/transfer/1", from: "127.0.0.5")
        #expect(missing.status == 401 && missing.error == "token_missing")
    }

    /// Request targets whose normalized form (which nginx matches locations against) differs
    /// from the raw target nginx passes on: a dot segment, an encoded dot, slash or backslash,
    /// an empty segment, a backslash.
    static let unnormalizedPaths = [
        "/api/transfer/%2e%2e/send", "/api/transfer/%2E%2E/send", "/api/transfer/../send", "/api/transfer/./42",
        "/api/transfer/42/..", "/api/transfer/..;/send", "/api/x/../transfer/42", "/api/transfer//42", "/api//transfer/42",
        "/api/transfer%2f42", "/api/transfer%2F42", "/api/transfer/..%2fsend", "/api/transfer%5c..%5csend",
        "/api/transfer\\..\\send", "/api/transfer/%2e/42", "/api/transfer/.%2e/send",
        "/api/transfer/../send?x=/../", "/v1/../api/transfer/42",
        // Issue 43, finding 2: path parameters and encoded `%` or `;` (a servlet container
        // drops `;x` from every segment; an app decoding twice reads `%252e` as a dot).
        "/api/;x/transfer/send", "/api/transfer;jsessionid=1", "/api/%252e%252e/transfer/1", "/api/transfer%3bx/1",
    ]

    @Test func unnormalizedPathsAreRefusedBeforeAnyLocationProxiesThem() throws {
        let (token, chain) = try login()
        try age(chain, by: 301)
        for path in Self.unnormalizedPaths {
            let response = try nginx.request("GET", path, from: "127.0.0.5", token: token)
            #expect(response.status == 400 && response.error == "invalid_request", "\(path): \(response.status) \(response.text)")
            #expect(response.headers["content-type"] == "application/json", "\(path)")
            #expect(response.json["path"] == nil, "\(path) reached the application")
        }
        // nginx itself refuses an encoded NUL (in its own HTML).
        let nul = try nginx.request("GET", "/api/transfer/42%00", from: "127.0.0.5", token: token)
        #expect(nul.status == 400 && nul.json["path"] == nil)
        // A query may hold anything; only the path is checked.
        #expect(try nginx.request("GET", "/api/orders?next=/a/../b%2f", from: "127.0.0.5", token: token).status == 200)
    }

    /// Paths an application may route to its transfer handler although they differ in letter
    /// case, encoding or suffix from the literal prefix /api/transfer/.
    static let transferPathVariants = [
        "/api/Transfer/send", "/api/TRANSFER/42", "/api/%74ransfer/42", "/api/transfer", "/api/transfer?to=bob",
        "/api/transfer.json", "/api/Transfer",
    ]

    @Test func everySpellingOfTheProtectedPrefixGetsTheStepUpCheck() throws {
        let (token, chain) = try login()
        for path in Self.transferPathVariants {  // a fresh authentication passes, with the auth time
            let fresh = try nginx.request("GET", path, from: "127.0.0.5", token: token)
            #expect(fresh.status == 200 && fresh.json["path"] as? String == path, "\(path): \(fresh.status) \(fresh.text)")
            #expect(Int64(fresh.json["x-baton-auth-time"] as? String ?? "") != nil, "\(path): \(fresh.text)")
        }
        try age(chain, by: 301)
        for path in Self.transferPathVariants {
            let refused = try nginx.request("GET", path, from: "127.0.0.5", token: token)
            #expect(refused.status == 401 && refused.error == "insufficient_user_authentication", "\(path): \(refused.status) \(refused.text)")
        }
        // Not the transfer prefix: the plain check.
        for path in ["/api/transfers", "/api/transferx/1", "/api/orders/transfer/1", "/api/orders?max_age=1"] {
            #expect(try nginx.request("GET", path, from: "127.0.0.5", token: token).status == 200, "\(path)")
        }
    }
}

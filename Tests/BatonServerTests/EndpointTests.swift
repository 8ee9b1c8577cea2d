@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Foundation
import Glibc
import Testing

/// Every row of the API table, against the real `baton serve` on a loopback port.
@Suite(.serialized)
struct EndpointTests {
    let server: ServerProcess

    init() throws {
        server = try ServerProcess()
        try server.addUser("alice")
    }

    @Test func loginReturnsATokenBundle() throws {
        let bundle = try server.login()
        #expect((bundle["token"] as? String)?.hasPrefix("bt1_") == true)
        #expect(bundle["token_type"] as? String == "Bearer")
        #expect(bundle["expires_in"] as? Int == 900)
        #expect((bundle["expires_at"] as? String).flatMap(RFC3339.parse) != nil)
        #expect((bundle["exchange_until"] as? String).flatMap(RFC3339.parse) != nil)
        #expect((bundle["chain_id"] as? String)?.count == 16)
        #expect(bundle["generation"] as? Int == 0)
    }

    @Test func loginRejectsBadBodiesNamingTheField() throws {
        let missing = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"x"}"#)
        #expect(missing.status == 400 && missing.error == "invalid_request" && missing.text.contains("device_id"))
        let wrongType = try server.request("POST", "/v1/login", json: #"{"username":7,"password":"x","device_id":"d"}"#)
        #expect(wrongType.status == 400 && wrongType.text.contains("username must be a string"))
        let badClass = try server.request("POST", "/v1/login", json: #"{"username":"a","password":"x","device_id":"d","device_class":"toaster"}"#)
        #expect(badClass.status == 400 && badClass.text.contains("device_class"))
        let notJSON = try server.request("POST", "/v1/login", json: "{nope")
        #expect(notJSON.status == 400 && notJSON.error == "invalid_request")
        let array = try server.request("POST", "/v1/login", json: "[]")
        #expect(array.status == 400 && array.text.contains("JSON object"))
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b")
        let form = try connection.readResponse()
        #expect(form.status == 415 && form.error == "unsupported_media_type")
    }

    @Test func wrongPasswordAndUnknownUserGetTheSameAnswer() throws {
        let wrong = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"wrong-password","device_id":"d"}"#)
        let unknown = try server.request("POST", "/v1/login", json: #"{"username":"nobody","password":"wrong-password","device_id":"d"}"#)
        #expect(wrong.status == 401 && unknown.status == 401)
        #expect(wrong.text == unknown.text && wrong.error == "invalid_credentials")
    }

    @Test func disabledAccountIsForbiddenAfterTheRightPassword() throws {
        try server.addUser("dora")
        let store = try TokenStore(path: server.databasePath, key: nil)
        try store.setDisabled("dora", true)
        store.close()
        let response = try server.request("POST", "/v1/login", json: #"{"username":"dora","password":"correct horse battery","device_id":"d"}"#)
        #expect(response.status == 403 && response.error == "account_disabled")
        let wrong = try server.request("POST", "/v1/login", json: #"{"username":"dora","password":"not the password","device_id":"d"}"#)
        #expect(wrong.status == 401)  // no account state is revealed without the password
    }

    @Test func repeatedFailuresAreThrottledWithRetryAfter() throws {
        try server.addUser("tom")
        for _ in 0..<5 {
            #expect(try server.request("POST", "/v1/login", json: #"{"username":"tom","password":"guess-guess","device_id":"d"}"#).status == 401)
        }
        let throttled = try server.request("POST", "/v1/login", json: #"{"username":"tom","password":"correct horse battery","device_id":"d"}"#)
        #expect(throttled.status == 429 && throttled.error == "too_many_attempts")
        #expect(Int(throttled.headers["retry-after"] ?? "") ?? 0 > 0)
    }

    @Test func exchangeIssuesTheNextGenerationAndReuseRevokes() throws {
        let first = try server.login()["token"] as! String
        let exchanged = try server.request("POST", "/v1/exchange", token: first)
        #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == 1)
        let second = exchanged.json["token"] as! String
        let reused = try server.request("POST", "/v1/exchange", token: first)
        #expect(reused.status == 401 && reused.error == "token_reused")
        #expect(reused.headers["www-authenticate"] == #"Bearer realm="baton", error="invalid_token""#)
        let revoked = try server.request("GET", "/v1/verify", token: second)
        #expect(revoked.status == 401 && revoked.error == "chain_revoked" && revoked.json["reason"] as? String == "reuse_detected")
        let again = try server.request("POST", "/v1/exchange", token: second)
        #expect(again.error == "chain_revoked")
    }

    @Test func forgedTokensAreInvalid() throws {
        for token in ["bt1_" + String(repeating: "A", count: 80), "garbage", "bt1_"] {
            #expect(try server.request("GET", "/v1/verify", token: token).error == "token_invalid")
            #expect(try server.request("POST", "/v1/exchange", token: token).error == "token_invalid")
            #expect(try server.request("POST", "/v1/logout", token: token).error == "token_invalid")
        }
    }

    @Test func verifyAnswersWithUserHeaders() throws {
        let bundle = try server.login()
        let response = try server.request("GET", "/v1/verify", token: bundle["token"] as? String)
        #expect(response.status == 200)
        #expect(response.json["username"] as? String == "alice" && response.json["device_id"] as? String == "phone-1")
        #expect(response.headers["x-baton-username"] == "alice")
        #expect(response.headers["x-baton-chain-id"] == bundle["chain_id"] as? String)
        #expect(response.headers["x-baton-user-id"] == String(response.json["user_id"] as! Int))
        let head = try server.request("HEAD", "/v1/verify", token: bundle["token"] as? String)
        #expect(head.status == 200 && head.body.isEmpty)
    }

    @Test func verifyOfASupersededTokenRevokesNothing() throws {
        let first = try server.login()["token"] as! String
        let second = try server.request("POST", "/v1/exchange", token: first).json["token"] as! String
        let superseded = try server.request("GET", "/v1/verify", token: first)
        #expect(superseded.status == 401 && superseded.error == "token_superseded")
        #expect(try server.request("GET", "/v1/verify", token: second).status == 200)
    }

    @Test func missingAuthorizationIsTokenMissingWithABareChallenge() throws {
        for (method, path) in [("GET", "/v1/verify"), ("POST", "/v1/exchange"), ("POST", "/v1/logout")] {
            let response = try server.request(method, path)
            #expect(response.status == 401 && response.error == "token_missing")
            #expect(response.headers["www-authenticate"] == #"Bearer realm="baton""#)
        }
        let basic = try server.request("GET", "/v1/verify", headers: [("Authorization", "Basic YTpi")])
        #expect(basic.error == "token_missing")
    }

    @Test func logoutRevokesTheChainWithTheHeadOrAConsumedToken() throws {
        let first = try server.login()["token"] as! String
        let second = try server.request("POST", "/v1/exchange", token: first).json["token"] as! String
        let out = try server.request("POST", "/v1/logout", token: second)
        #expect(out.status == 204 && out.body.isEmpty)
        let after = try server.request("GET", "/v1/verify", token: second)
        #expect(after.error == "chain_revoked" && after.json["reason"] as? String == "logout")
        // A consumed token at logout ends the chain too: someone else moved it on (a thief who
        // exchanged the device's token must not outlive the user's logout).
        let third = try server.login()["token"] as! String
        let stolen = try server.request("POST", "/v1/exchange", token: third).json["token"] as! String
        #expect(try server.request("POST", "/v1/logout", token: third).status == 204)
        let thiefAfter = try server.request("GET", "/v1/verify", token: stolen)
        #expect(thiefAfter.error == "chain_revoked" && thiefAfter.json["reason"] as? String == "logout")
    }

    @Test func healthReadinessAndMetrics() throws {
        #expect(try server.request("GET", "/healthz").status == 200)
        #expect(try server.request("GET", "/readyz").status == 200)
        _ = try server.login()
        let metrics = try server.request("GET", "/metrics")
        #expect(metrics.status == 200 && metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
        for name in ["baton_http_requests_total{route=\"/v1/login\",status=\"200\"}", "baton_http_request_duration_seconds_bucket",
                     "baton_exchanges_total", "baton_reuse_detections_total", "baton_revocations_total{reason=\"evicted\"}",
                     "baton_logins_total{outcome=\"succeeded\"} 1", "baton_group_commit_batch_size_bucket"] {
            #expect(metrics.text.contains(name), "\(name)")
        }
    }

    @Test func unknownPathsAndMethods() throws {
        let missing = try server.request("GET", "/v1/nothing")
        #expect(missing.status == 404 && missing.error == "not_found")
        let wrongMethod = try server.request("GET", "/v1/exchange")
        #expect(wrongMethod.status == 405 && wrongMethod.error == "method_not_allowed" && wrongMethod.headers["allow"] == "POST")
        let deleteVerify = try server.request("DELETE", "/v1/verify")
        #expect(deleteVerify.status == 405 && deleteVerify.headers["allow"] == "GET, HEAD")
    }

    @Test func hundredRequestsOnOneKeptAliveConnection() throws {
        let token = try server.login()["token"] as! String
        let connection = try server.connect()
        defer { connection.close() }
        for index in 0..<100 {
            let response = try connection.request("GET", index % 2 == 0 ? "/v1/verify" : "/healthz", token: token)
            #expect(response.status == 200, "request \(index)")
            #expect(response.headers["connection"] == nil)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        #expect(try connection.readResponse().status == 404)
        #expect(try connection.readResponse().status == 200)
    }

    /// An exchange starts on the event loop and is answered from the writer's thread after its
    /// commit; what the client pipelined behind it waits for that answer. The verify sent in
    /// the same write as the exchange must therefore see the token consumed, and the second
    /// exchange of it (reuse) must come after the first's success and revoke the chain.
    @Test func requestsPipelinedBehindAnExchangeSeeItsCommit() throws {
        let token = try server.login()["token"] as! String
        let connection = try server.connect()
        defer { connection.close() }
        let exchange = "POST /v1/exchange HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Length: 0\r\n\r\n"
        let verify = "GET /v1/verify HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n"
        try connection.send(exchange + verify + exchange + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        let exchanged = try connection.readResponse()
        #expect(exchanged.status == 200 && exchanged.json["generation"] as? Int == 1, "\(exchanged.text)")
        let superseded = try connection.readResponse()
        #expect(superseded.status == 401 && superseded.error == "token_superseded", "\(superseded.text)")
        let reused = try connection.readResponse()
        #expect(reused.status == 401 && reused.error == "token_reused", "\(reused.text)")
        #expect(try connection.readResponse().status == 200)
        let successor = try #require(exchanged.json["token"] as? String)
        #expect(try server.request("GET", "/v1/verify", token: successor).error == "chain_revoked")
    }

    /// A client that hangs up while its exchange is with the writer: the exchange still
    /// commits (the token is consumed), and the loop goes on serving.
    @Test func anExchangeWhoseClientLeftStillCommits() throws {
        let token = try server.login()["token"] as! String
        let connection = try server.connect()
        try connection.send("POST /v1/exchange HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Length: 0\r\n\r\n")
        connection.close()
        #expect(try eventually { try server.request("GET", "/v1/verify", token: token).error == "token_superseded" })
        #expect(try server.request("GET", "/healthz").status == 200)
    }

    @Test func http10ClosesAfterTheResponse() throws {
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("GET /healthz HTTP/1.0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200 && response.headers["connection"] == "close")
        #expect(connection.isClosedByServer())
    }
}

/// Expiry-driven codes with short lifetimes: the clock is real, so the test awaits the condition.
struct ExpiryTests {
    @Test func expiredHeadIsTokenExpiredThenWindowClosesThenSessionEnds() throws {
        let server = try ServerProcess(["--token-ttl", "300ms", "--exchange-window", "300ms", "--max-session", "60s"])
        try server.addUser("alice")
        let bundle = try server.login()
        let token = bundle["token"] as! String
        #expect(try eventually { try server.request("GET", "/v1/verify", token: token).error == "token_expired" })
        // Exchanging would consume the token, so wait out the window on the clock, then try once.
        // From the server's own deadline (whole seconds: one more covers the fraction), not from
        // when the test asked: a loaded machine may take long over the login's argon2id.
        let until = try #require((bundle["exchange_until"] as? String).flatMap(RFC3339.parse))
        Thread.sleep(until: Date(timeIntervalSince1970: Double(until.milliseconds) / 1000 + 1.2))
        #expect(try server.request("POST", "/v1/exchange", token: token).error == "exchange_window_closed")
    }

    @Test func sessionPastItsAbsoluteLifeIsSessionExpired() throws {
        let server = try ServerProcess(["--max-session", "400ms"])
        try server.addUser("alice")
        let token = try server.login()["token"] as! String
        #expect(try eventually { try server.request("GET", "/v1/verify", token: token).error == "session_expired" })
        #expect(try server.request("POST", "/v1/exchange", token: token).error == "session_expired")
    }
}

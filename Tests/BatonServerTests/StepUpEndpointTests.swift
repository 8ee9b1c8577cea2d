@testable import BatonCore
@testable import BatonStore
import Foundation
import Glibc
import Synchronization
import Testing

/// Step-up (RFC 9470) and the self-service password change against the real `baton serve`.
@Suite(.serialized)
struct StepUpEndpointTests {
    static let password = "correct horse battery"
    static func challenge(_ maxAge: Int) -> String {
        #"Bearer realm="baton", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age=\#(maxAge)"#
    }

    let server: ServerProcess

    init() throws {
        server = try ServerProcess(["--max-chains-per-user", "0"])
        try server.addUser("alice")
    }

    func age(_ chain: String, by seconds: Int64) throws { try server.ageAuthentication(ofChain: chain, by: seconds) }

    func confirm(_ token: String, _ password: String) throws -> HTTPConnection.Response {
        try server.request("POST", "/v1/confirm", token: token, json: #"{"password":"\#(password)"}"#)
    }

    @Test func authTimeIsSetAtLoginAndKeptAcrossExchanges() throws {
        let before = SystemClock().now().epochSeconds
        let bundle = try server.login()
        let first = try server.request("GET", "/v1/verify", token: bundle["token"] as? String)
        #expect(first.status == 200)
        let authTime = try #require((first.json["auth_time"] as? String).flatMap(RFC3339.parse))
        #expect((before...SystemClock().now().epochSeconds).contains(authTime.epochSeconds))
        #expect(first.headers["x-baton-auth-time"] == String(authTime.epochSeconds))
        var token = bundle["token"] as! String
        for _ in 0..<3 {
            token = try server.request("POST", "/v1/exchange", token: token).json["token"] as! String
        }
        let later = try server.request("GET", "/v1/verify", token: token)
        #expect(later.json["auth_time"] as? String == first.json["auth_time"] as? String)
        #expect(later.headers["x-baton-auth-time"] == first.headers["x-baton-auth-time"])
    }

    @Test func verifyWithMaxAgeAcceptsInsideTheWindowAndChallengesOutside() throws {
        let bundle = try server.login()
        let token = bundle["token"] as! String
        #expect(try server.request("GET", "/v1/verify?max_age=3600", token: token).status == 200)
        try age(bundle["chain_id"] as! String, by: 600)
        #expect(try server.request("GET", "/v1/verify?max_age=660", token: token).status == 200)  // inside, whatever the time since login
        let refused = try server.request("GET", "/v1/verify?max_age=300", token: token)
        #expect(refused.status == 401)
        #expect(refused.headers["www-authenticate"] == Self.challenge(300))
        #expect(refused.error == "insufficient_user_authentication" && refused.json["max_age"] as? Int == 300)
        #expect(refused.headers["x-baton-error"] == refused.text)  // what nginx passes on
        #expect(refused.json["error_description"] as? String == "A more recent authentication is required (within 300 seconds); confirm the password.")
        let oneSecond = try server.request("GET", "/v1/verify?max_age=1", token: token)
        #expect(oneSecond.json["error_description"] as? String == "A more recent authentication is required (within 1 second); confirm the password.")
        #expect(refused.headers["cache-control"] == "no-store")
        // HEAD answers the same, and without max_age the old authentication does not matter.
        #expect(try server.request("HEAD", "/v1/verify?max_age=300", token: token).status == 401)
        #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
        // max_age=0: any authentication older than now is too old.
        let fresh = try server.login(device: "phone-2")["token"] as! String
        #expect(eventually { (try? server.request("GET", "/v1/verify?max_age=0", token: fresh).status) == 401 })
    }

    @Test(arguments: [
        ("max_age=", "max_age"), ("max_age=-1", "max_age"), ("max_age=+5", "max_age"), ("max_age=%33%30", "max_age"),
        ("max_age=1.5", "max_age"), ("max_age=5s", "max_age"), ("max_age=0x10", "max_age"), ("max_age=2147483648", "max_age"),
        ("max_age=99999999999", "max_age"), ("max_age", "max_age"), ("max_age=5&max_age=5", "max_age"), ("max_age=5&", "max_age"),
        ("MAX_AGE=5", "MAX_AGE"), ("acr_values=urn:mfa", "acr_values"), ("max_age=5&scope=x", "scope"),
    ])
    func malformedMaxAgeIs400NamingIt(_ query: String, _ named: String) throws {
        let token = try server.login()["token"] as! String
        let response = try server.request("GET", "/v1/verify?" + query, token: token)
        #expect(response.status == 400 && response.error == "invalid_request", "\(query): \(response.text)")
        #expect((response.json["error_description"] as? String)?.contains(named) == true, "\(query): \(response.text)")
    }

    @Test func anEmptyQueryAndTheLargestMaxAgeAreAccepted() throws {
        let token = try server.login()["token"] as! String
        #expect(try server.request("GET", "/v1/verify?", token: token).status == 200)
        #expect(try server.request("GET", "/v1/verify?max_age=2147483647", token: token).status == 200)
        #expect(try server.request("GET", "/v1/verify?max_age=0600", token: token).status == 200)
    }

    @Test func confirmSucceedsAndFailsWithoutExchanging() throws {
        let bundle = try server.login()
        let token = bundle["token"] as! String
        try age(bundle["chain_id"] as! String, by: 3600)
        let wrong = try confirm(token, "not the password")
        #expect(wrong.status == 401 && wrong.error == "invalid_credentials")
        #expect(wrong.json["error_description"] as? String == "Invalid password.")  // no username was sent
        #expect(try server.request("GET", "/v1/verify", token: token).status == 200)  // the chain stays alive
        let before = SystemClock().now().epochSeconds
        let confirmed = try confirm(token, Self.password)
        #expect(confirmed.status == 200 && confirmed.headers["cache-control"] == "no-store")
        let authTime = try #require((confirmed.json["auth_time"] as? String).flatMap(RFC3339.parse))
        #expect(authTime.epochSeconds >= before)
        // The next verify sees it at once, for the same token: nothing was exchanged.
        let verified = try server.request("GET", "/v1/verify?max_age=300", token: token)
        #expect(verified.status == 200 && verified.json["auth_time"] as? String == confirmed.json["auth_time"] as? String)
    }

    @Test func theFifthFailedConfirmationRevokesTheChainWithConfirmFailed() throws {
        let bundle = try server.login()
        let token = bundle["token"] as! String
        for _ in 1...4 { #expect(try confirm(token, "not the password").error == "invalid_credentials") }
        let fifth = try confirm(token, "not the password")
        #expect(fifth.status == 401 && fifth.error == "chain_revoked" && fifth.json["reason"] as? String == "confirm_failed")
        for response in [try server.request("GET", "/v1/verify", token: token), try server.request("POST", "/v1/exchange", token: token),
                         try confirm(token, Self.password)] {
            #expect(response.status == 401 && response.error == "chain_revoked" && response.json["reason"] as? String == "confirm_failed")
        }
        let metrics = try server.request("GET", "/metrics").text
        #expect(metrics.contains(#"baton_confirmations_total{outcome="failed"} 5"#))
        #expect(metrics.contains(#"baton_confirmations_total{outcome="revoked"} 1"#))
        #expect(metrics.contains(#"baton_revocations_total{reason="confirm_failed"} 1"#))
        let (status, out, _) = try runBaton(["admin", "audit", "--kind", "step_up_failed", "--format", "json", "--db", server.databasePath])
        #expect(status == 0 && out.split(separator: "\n").count == 5)
        #expect(out.contains(#""consecutive_failures":5"#))
    }

    /// Failed logins (anyone's) do not throttle a live chain's step-up; the chain's own rate
    /// limit does, and is audited and counted as `throttled`.
    @Test func confirmIsLimitedPerChainNotByTheLoginThrottle() throws {
        let token = try server.login()["token"] as! String
        for _ in 0..<5 {
            let failed = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"guess-guess","device_id":"d"}"#)
            #expect(failed.status == 401)
        }
        for _ in 0..<6 { #expect(try confirm(token, Self.password).status == 200) }
        let throttled = try confirm(token, Self.password)
        #expect(throttled.status == 429 && throttled.error == "too_many_attempts")
        #expect(Int(throttled.headers["retry-after"] ?? "") ?? 0 > 0)
        #expect(try server.request("GET", "/metrics").text.contains(#"baton_confirmations_total{outcome="throttled"} 1"#))
    }

    @Test func confirmGivesVerifysAnswersForTokensVerifyRefuses() throws {
        let first = try server.login()["token"] as! String
        _ = try server.request("POST", "/v1/exchange", token: first)
        #expect(try confirm(first, Self.password).error == "token_superseded")
        #expect(try confirm("bt1_" + String(repeating: "A", count: 80), Self.password).error == "token_invalid")
        let missing = try server.request("POST", "/v1/confirm", json: #"{"password":"x"}"#)
        #expect(missing.status == 401 && missing.error == "token_missing")
        // The token is checked before the body: no token is 401 whatever the body.
        #expect(try server.request("POST", "/v1/confirm", json: "{}").error == "token_missing")
        let token = try server.login(device: "phone-2")["token"] as! String
        let noBody = try server.request("POST", "/v1/confirm", token: token, json: "{}")
        #expect(noBody.status == 400 && noBody.text.contains("password is required"))
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send("POST /v1/confirm HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx")
        #expect(try connection.readResponse().error == "unsupported_media_type")
        #expect(try server.request("GET", "/v1/confirm", token: token).status == 405)
    }

    @Test func passwordChangeRevokesTheOtherChainsKeepsThisOneAndRetiresTheOldPassword() throws {
        let phone = try server.login(device: "phone-1")["token"] as! String
        let laptopBundle = try server.login(device: "laptop")
        let laptop = laptopBundle["token"] as! String
        try age(laptopBundle["chain_id"] as! String, by: 3600)
        let change = try server.request("POST", "/v1/password", token: laptop,
                                        json: #"{"current_password":"correct horse battery","new_password":"a brand new passphrase"}"#)
        #expect(change.status == 200 && change.json["revoked_chains"] as? Int == 1, "\(change.text)")
        #expect((change.json["auth_time"] as? String).flatMap(RFC3339.parse) != nil)
        let other = try server.request("GET", "/v1/verify", token: phone)
        #expect(other.error == "chain_revoked" && other.json["reason"] as? String == "password_changed")
        #expect(try server.request("GET", "/v1/verify?max_age=60", token: laptop).status == 200)  // kept, freshly authenticated
        let old = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse battery","device_id":"d"}"#)
        #expect(old.status == 401 && old.error == "invalid_credentials")
        let new = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"a brand new passphrase","device_id":"d"}"#)
        #expect(new.status == 200)
        let (_, out, _) = try runBaton(["admin", "audit", "--kind", "password_changed", "--format", "json", "--db", server.databasePath])
        #expect(out.contains(#""chain_id":"\#(laptopBundle["chain_id"] as! String)""#) && out.contains(#""revoked_chains":1"#))
    }

    @Test func passwordChangeRefusesBadInputNamingTheField() throws {
        let token = try server.login()["token"] as! String
        let short = try server.request("POST", "/v1/password", token: token, json: #"{"current_password":"correct horse battery","new_password":"short"}"#)
        #expect(short.status == 400 && short.json["error_description"] as? String == "new_password must be at least 8 bytes (UTF-8).")
        let missing = try server.request("POST", "/v1/password", token: token, json: #"{"current_password":"correct horse battery"}"#)
        #expect(missing.status == 400 && missing.text.contains("new_password is required"))
        let wrong = try server.request("POST", "/v1/password", token: token, json: #"{"current_password":"guess-guess","new_password":"a brand new passphrase"}"#)
        #expect(wrong.status == 401 && wrong.error == "invalid_credentials" && wrong.json["error_description"] as? String == "Invalid password.")
        let noToken = try server.request("POST", "/v1/password", json: #"{"current_password":"x","new_password":"y"}"#)
        #expect(noToken.status == 401 && noToken.error == "token_missing")
    }

    @Test func racingConfirmsAndExchangesLeaveOneVerifyingTokenAndAConsistentCounter() throws {
        for round in 0..<3 {
            // Each round its own user and addresses (X-Forwarded-For from loopback is trusted),
            // so the previous round's throttle blocks do not carry over.
            try server.addUser("racer\(round)")
            let bundle = try server.login("racer\(round)", headers: [("X-Forwarded-For", "203.0.113.\(round)")])
            let chain = bundle["chain_id"] as! String
            let current = Mutex<[String]>([bundle["token"] as! String])  // every token issued, newest last
            let answers = Mutex<[String]>([])
            let port = server.port
            race(threads: 9) { index in
                for _ in 0..<(index == 0 ? 8 : 3) {
                    guard let connection = try? HTTPConnection(port: port) else { continue }
                    defer { connection.close() }
                    let token = current.withLock { $0.last! }
                    let from = [("X-Forwarded-For", "198.51.\(round).\(index)")]
                    if index == 0 {
                        if let response = try? connection.request("POST", "/v1/exchange", token: token, headers: from),
                           let next = response.json["token"] as? String {
                            current.withLock { $0.append(next) }
                        }
                    } else if let response = try? connection.request("POST", "/v1/confirm", token: token, headers: from,
                                                                      json: #"{"password":"guess-guess"}"#) {
                        answers.withLock { $0.append(response.error ?? "ok") }
                    }
                }
            }
            let tokens = current.withLock { $0 }
            let verifying = try tokens.filter { try server.request("GET", "/v1/verify", token: $0).status == 200 }
            #expect(verifying.count <= 1, "round \(round)")
            let connection = try Connection(path: server.databasePath)
            defer { connection.close() }
            let (failures, reason) = try #require(try connection.statement("SELECT confirm_failures, revoked_reason FROM chains WHERE id = ?")
                .first([.int(ChainID(hex: chain)!.rawValue)]) { ($0.int(0), $0.optionalText(1)) })
            let counted = answers.withLock { $0.filter { $0 == "invalid_credentials" }.count }
            #expect(failures == Int64(counted + (reason == "confirm_failed" ? 1 : 0)), "round \(round): \(answers.withLock { $0 })")
            #expect(failures <= 5)
            let audited = try connection.statement("SELECT count(*) FROM audit WHERE chain_id = ? AND kind = 'step_up_failed' AND detail LIKE '%invalid_credentials%'")
                .first([.int(ChainID(hex: chain)!.rawValue)]) { $0.int(0) }
            #expect(audited == failures)
        }
    }
}

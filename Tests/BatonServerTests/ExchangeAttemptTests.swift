@testable import BatonAPI
import BatonCore
import BatonTestSupport
import Foundation
import Testing

/// `X-Baton-Exchange-Attempt` on the wire (R3b, docs/api.md): the parser's table, and the
/// answers of a real server on a loopback port.
struct ExchangeAttemptTests {
    @Test(arguments: [
        ([String](), Int?.none), (["1"], 1), (["7"], 7), (["2147483647"], 2_147_483_647),
    ]) func validValuesParse(_ values: [String], _ expected: Int?) throws {
        #expect(try ExchangeAttempt.parse(values) == expected)
    }

    @Test(arguments: ["", "0", "01", "+1", "-1", " 1", "1 ", "1.0", "1,2", "2147483648", "99999999999", "x", "١"])
    func malformedValuesAreRefusedNamingTheHeader(_ value: String) {
        #expect(throws: BatonError.invalidArgument(
            "X-Baton-Exchange-Attempt must be a whole number from 1 to 2147483647 (the number of this exchange attempt).")) {
            try ExchangeAttempt.parse([value])
        }
    }

    @Test func twoFieldsAreRefused() {
        #expect(throws: BatonError.invalidArgument("Send X-Baton-Exchange-Attempt once.")) { try ExchangeAttempt.parse(["1", "2"]) }
    }

    @Test func aLateEarlierAttemptIsAnswered409WithTheHeadsNumberAndTheHeadStaysLive() throws {
        let server = try ServerProcess()
        try server.addUser("alice")
        let token = try #require(try server.login()["token"] as? String)
        let device = ("X-Device-Id", "phone-1")
        let second = try server.request("POST", "/v1/exchange", token: token, headers: [device, ("X-Baton-Exchange-Attempt", "2")])
        #expect(second.status == 200)
        let successor = try #require(second.json["token"] as? String)
        let late = try server.request("POST", "/v1/exchange", token: token, headers: [device, ("X-Baton-Exchange-Attempt", "1")])
        #expect(late.status == 409)
        #expect(late.headers["cache-control"] == "no-store")
        #expect(late.json["error"] as? String == "exchange_attempt_superseded")
        #expect(late.json["attempt"] as? Int == 2)
        #expect(try server.request("GET", "/v1/verify", token: successor).status == 200)
        let malformed = try server.request("POST", "/v1/exchange", token: successor, headers: [device, ("X-Baton-Exchange-Attempt", "0")])
        #expect(malformed.status == 400)
        #expect(malformed.error == "invalid_request")
        #expect((malformed.json["error_description"] as? String ?? "").contains("X-Baton-Exchange-Attempt"))
        #expect(try server.request("GET", "/v1/verify", token: successor).status == 200)  // a refused request consumes nothing
    }
}

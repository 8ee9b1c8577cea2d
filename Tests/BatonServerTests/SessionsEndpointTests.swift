import BatonCore
import Foundation
import Testing

/// `/v1/sessions` on a real server, both stores: the list with the caller's session marked,
/// signing out one session and the others behind a recent authentication (RFC 9470's 401 and
/// challenge otherwise), and 404 alike for another user's session, an unknown one and a
/// malformed id.
@Suite(.serialized)
struct SessionsEndpointTests {
    static func rawID(_ hex: String) -> Int64 { ChainID(hex: hex)!.rawValue }

    @Test(arguments: StoreBackend.allCases)
    func usersListAndSignOutTheirOwnSessionsAfterAStepUp(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool {
            try server.addUser("alice")
            try server.addUser("bob")
            let phone = try server.login("alice", device: "phone-1", headers: [("User-Agent", "Phone/1")])
            let laptop = try server.login("alice", device: "laptop-1", headers: [("User-Agent", "Laptop/1")])
            let bob = try server.login("bob", device: "phone-9")
            let laptopToken = laptop["token"] as! String, phoneChain = phone["chain_id"] as! String

            let list = try server.request("GET", "/v1/sessions", token: laptopToken)
            #expect(list.status == 200 && list.headers["cache-control"] == "no-store", "\(list.text)")
            let sessions = list.json["sessions"] as? [[String: Any]] ?? []
            #expect(sessions.map { $0["chain_id"] as? String } == [laptop["chain_id"] as? String, phoneChain])
            #expect(sessions.map { $0["current"] as? Bool } == [true, false])
            #expect(sessions.map { $0["device_id"] as? String } == ["laptop-1", "phone-1"])
            #expect(sessions[1]["last_user_agent"] as? String == "Phone/1" && sessions[1]["last_ip"] as? String == "127.0.0.1")
            #expect(try server.request("GET", "/v1/sessions").status == 401)

            // The laptop's login is 10 minutes old: signing out needs a step-up first.
            try server.executeSQL("UPDATE chains SET auth_time = auth_time - 600000 WHERE id = \(Self.rawID(laptop["chain_id"] as! String))")
            let tooOld = try server.request("DELETE", "/v1/sessions/\(phoneChain)", token: laptopToken)
            #expect(tooOld.status == 401 && tooOld.error == "insufficient_user_authentication" && tooOld.json["max_age"] as? Int == 300)
            #expect(tooOld.headers["www-authenticate"]?.contains(#"error="insufficient_user_authentication""#) == true)
            #expect(try server.request("GET", "/v1/verify", token: phone["token"] as? String).status == 200)
            let confirmed = try server.request("POST", "/v1/confirm", token: laptopToken, json: #"{"password":"correct horse battery"}"#)
            #expect(confirmed.status == 200)

            for path in ["/v1/sessions/\(bob["chain_id"] as! String)", "/v1/sessions/0000000000003039", "/v1/sessions/not-a-chain"] {
                let missing = try server.request("DELETE", path, token: laptopToken)
                #expect(missing.status == 404 && missing.error == "not_found", "\(path): \(missing.status) \(missing.text)")
            }
            let signedOut = try server.request("DELETE", "/v1/sessions/\(phoneChain)", token: laptopToken)
            #expect(signedOut.status == 204, "\(signedOut.text)")
            let ended = try server.request("GET", "/v1/verify", token: phone["token"] as? String)
            #expect(ended.status == 401 && ended.error == "chain_revoked" && ended.json["reason"] as? String == "signed_out")
            #expect(try server.request("GET", "/v1/verify", token: bob["token"] as? String).status == 200)
            #expect(try server.request("POST", "/v1/sessions/\(phoneChain)", token: laptopToken).status == 405)

            let tablet = try server.login("alice", device: "tablet-1")
            let others = try server.request("POST", "/v1/sessions/revoke-others", token: laptopToken)
            #expect(others.status == 200 && others.json["revoked"] as? Int == 1, "\(others.text)")
            #expect(try server.request("GET", "/v1/verify", token: tablet["token"] as? String).json["reason"] as? String == "signed_out")
            let remaining = try server.request("GET", "/v1/sessions", token: laptopToken).json["sessions"] as? [[String: Any]] ?? []
            #expect(remaining.count == 1)

            // The operator's view of the same list.
            let (status, shown, problems) = try runBaton(["admin", "user", "show", "alice", "--db", server.databasePath])
            #expect(status == 0 && problems.isEmpty, "\(problems)")
            #expect(shown.hasPrefix("1 live session of 'alice':\n") && shown.contains(laptop["chain_id"] as! String) && shown.contains("laptop-1"), "\(shown)")
            #expect(try runBaton(["admin", "user", "show", "carol", "--db", server.databasePath]).0 != 0)
        }
    }
}

import Foundation
import Testing

/// Issue 32 §2: the server prints one JSON line for every revocation, with its reason, and for
/// the reuse behind it; never a token.
struct SecurityLogTests {
    /// The server's standard output lines that are security events, as JSON objects.
    static func securityEvents(_ server: ServerProcess) -> [[String: Any]] {
        server.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["event"] as? String == "security" }
    }

    @Test(arguments: StoreBackend.allCases)
    func reuseRevocationPrintsOneLineWithItsReason(_ backend: StoreBackend) async throws {
        let (server, chain, first) = try await IncidentTests.reuseIncident(backend)
        try await offPool { () throws in
            #expect(server.stop() == 0)  // flushes the buffered log
            let events = Self.securityEvents(server)
            let revoked = events.filter { $0["kind"] as? String == "chain_revoked" }
            #expect(revoked.count == 1)
            #expect(revoked.first?["reason"] as? String == "reuse_detected")
            #expect(revoked.first?["chain_id"] as? String == chain)
            #expect(revoked.first?["user_id"] as? Int == 1)
            #expect(revoked.first?["ip"] as? String == "203.0.113.9")
            #expect(events.contains { $0["kind"] as? String == "reuse_detected" && $0["chain_id"] as? String == chain })
            #expect(!server.stdout.contains(first) && !server.stdout.contains(String(first.dropFirst(4).prefix(40))))
        }
    }

    @Test func logoutPrintsItsLineWithTheAccessLogOff() throws {
        let server = try ServerProcess(["--access-log", "off"])
        try server.addUser("alice")
        let login = try server.login()
        let token = login["token"] as! String
        #expect(try server.request("POST", "/v1/logout", token: token).status == 204)
        #expect(server.stop() == 0)
        let events = Self.securityEvents(server)
        #expect(events.count == 1)
        #expect(events.first?["kind"] as? String == "chain_revoked")
        #expect(events.first?["reason"] as? String == "logout")
        #expect(events.first?["chain_id"] as? String == login["chain_id"] as? String)
        #expect(!server.stdout.contains(#""path":"#))  // no request lines
        #expect(!server.stdout.contains(token))
    }
}

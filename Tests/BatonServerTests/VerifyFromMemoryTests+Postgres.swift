import Foundation
import Testing

/// The same races on PostgreSQL, where several instances share one database. Verify there
/// reads the database on every request today (docs/design.md, "Verify from memory"); these
/// tests hold any memory it gets later (LISTEN/NOTIFY) to the same guarantee: a sign-out
/// answered by another instance, or `baton admin revoke` run as another process, stops every
/// verify that starts after it was acknowledged.
extension VerifyFromMemoryTests {
    /// How alice's session B signs session A out: that one session (`DELETE /v1/sessions/{A}`),
    /// or every other one (`POST /v1/sessions/revoke-others`).
    enum SignOut: String, CaseIterable, CustomStringConvertible, Sendable {
        case one, others
        var description: String { rawValue }
    }

    /// Two `baton serve` on one PostgreSQL database. In each of 5 rounds alice logs in a fresh
    /// session A on the first instance; threads hammer verify with A's token there while her
    /// session B signs A out on the second: once the sign-out's answer was read, no verify
    /// that started on the first instance answers 200, and one after the race is refused
    /// (chain_revoked, signed_out).
    @Test(arguments: SignOut.allCases)
    func verifyRacingSignOutOnAnotherPostgresInstanceRefusesOnceItWasAnswered(_ signOut: SignOut) async throws {
        let first = try await ServerProcess.start(on: .postgresql)
        try await offPool { () throws in
            defer { first.stop() }
            let second = try ServerProcess(["--key-file", first.directory + "/baton.key"], database: first.databasePath)
            defer { second.stop() }
            try first.addUser("alice")
            let sessionB = try second.login("alice", device: "laptop-1")["token"] as! String
            for round in 0..<5 {
                let sessionA = try first.login("alice", device: "phone-\(round)")
                let token = sessionA["token"] as! String, chain = sessionA["chain_id"] as! String
                let (outcome, _) = try Self.hammer(first, token: token) { () throws -> String? in
                    let answer = switch signOut {
                    case .one: try second.request("DELETE", "/v1/sessions/\(chain)", token: sessionB)
                    case .others: try second.request("POST", "/v1/sessions/revoke-others", token: sessionB)
                    }
                    guard answer.status == (signOut == .one ? 204 : 200) else {
                        throw ServerProcess.ServerError.didNotStart("sign-out: \(answer.status) \(answer.text)")
                    }
                    return nil
                }
                #expect(outcome.acceptedBefore > 0, "round \(round): A's token never verified before the sign-out")
                #expect(outcome.startedAfter >= Self.hammers * Self.verifiesAfterChange)
                #expect(outcome.acceptedAfter == 0, "round \(round): \(outcome.acceptedAfter) verifies after the sign-out's answer accepted A")
                let after = try first.request("GET", "/v1/verify", token: token)
                #expect(after.status == 401 && after.error == "chain_revoked" && after.json["reason"] as? String == "signed_out",
                        "round \(round): \(after.status) \(after.text)")
            }
            #expect(try first.request("GET", "/v1/verify", token: sessionB).status == 200)
        }
    }

    /// `baton admin revoke` (one user's chains, or every chain) runs as a separate process on
    /// the PostgreSQL database while verify runs hot on an instance: once it exited, no verify
    /// succeeds.
    @Test(arguments: [["--user", "alice", "--reason", "phone stolen"], ["--all", "--reason", "restore", "--yes"]])
    func verifyRacingRevocationOfAPostgresDatabaseByAnotherProcessRefusesOnceItExited(_ arguments: [String]) async throws {
        let server = try await ServerProcess.start(on: .postgresql)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            let token = try server.login()["token"] as! String
            let (outcome, _) = try Self.hammer(server, token: token) { () throws -> String? in
                let (status, _, err) = try runBaton(["admin", "revoke"] + arguments + ["--db", server.databasePath])
                guard status == 0 else { throw ServerProcess.ServerError.didNotStart("revoke: \(err)") }
                return nil
            }
            #expect(outcome.acceptedBefore > 0)
            #expect(outcome.startedAfter >= Self.hammers * Self.verifiesAfterChange)
            #expect(outcome.acceptedAfter == 0, "\(outcome.acceptedAfter) verifies after the revocation exited answered 200")
            #expect(try server.request("GET", "/v1/verify", token: token).error == "chain_revoked")
        }
    }
}

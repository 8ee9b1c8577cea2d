import Foundation
import Testing

/// LineageCheck on both stores reports each kind of damage a fault could do: the fault tests
/// (the crash loop, the full disk, the operator's locks, the soak) pass only when it reports
/// nothing, so a reader that saw no rows, or misread a hash, must fail here.
@Suite(.serialized, .ownThreads)
struct LineageCheckTests {
    @Test(arguments: StoreBackend.allCases)
    func damagedLineagesAreReported(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--max-chains-per-user", "0"])
        try server.addUser("alice")
        var acknowledged: [Int64: Acknowledged] = [:]
        var superseded: [Int64: String] = [:]
        for device in ["a", "b", "c", "d"] {
            let login = try server.login(device: device)
            let chain = try #require(chainDatabaseID(login["chain_id"] as? String ?? ""))
            var token = try #require(login["token"] as? String)
            for generation in 1...2 {
                let response = try server.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", device)])
                try #require(response.status == 200 && response.json["generation"] as? Int == generation)
                superseded[chain] = token
                token = try #require(response.json["token"] as? String)
            }
            acknowledged[chain] = Acknowledged(generation: 2, token: token)
        }
        #expect(server.stop() == 0)
        let chains = acknowledged.keys.sorted()
        // The exchange whose answer was lost: the client holds generation 1, the head is 2.
        acknowledged[chains[3]] = Acknowledged(generation: 1, token: superseded[chains[3]]!)
        let clean = try LineageCheck(databasePath: server.databasePath, acknowledged: acknowledged)
        #expect(clean.problems == [])
        #expect(clean.chainsChecked == 4 && clean.acknowledgedFound == 4 && clean.aheadByOne == 1)

        try server.executeSQL("DELETE FROM audit WHERE kind = 'exchanged' AND chain_id = \(chains[0]) AND generation = 1")
        try server.executeSQL("UPDATE chains SET head_generation = 4 WHERE id = \(chains[1])")
        try server.executeSQL("UPDATE tokens SET generation = 2 WHERE chain_id = \(chains[2]) AND generation = 1")
        acknowledged[chains[3]] = Acknowledged(generation: 2, token: superseded[chains[3]]!)  // not the head
        acknowledged[999_999] = Acknowledged(generation: 0, token: "bt1_never-issued")
        let damaged = try LineageCheck(databasePath: server.databasePath, acknowledged: acknowledged)
        #expect(damaged.problems.sorted() == [
            "1 exchanged tokens at or past their chain's head",
            "acknowledged chains missing: [999999]",
            "chain \(chains[0]): exchanged events for generations [2], head 2",
            "chain \(chains[1]): exchanged events for generations [1, 2], head 4",
            "chain \(chains[1]): generations [0, 1] + head 4 not contiguous",
            "chain \(chains[1]): head 4, acknowledged 2: lost",
            "chain \(chains[2]): generations [0, 2] + head 2 not contiguous",
            "chain \(chains[3]): head 2 is not the acknowledged token",
        ].sorted())
        #expect(damaged.lost == 2)
    }
}

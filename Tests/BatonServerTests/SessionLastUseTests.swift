import BatonCore
import Foundation
import Testing

/// Issue 28, finding 3 (second half): "last used" in `GET /v1/sessions` was the newest use among
/// the chain's audit events, so every refused request a flood added for the chain (a refused
/// proof is audited) made the list read more. Since schema version 9 the last use is kept on the
/// chain's row by the transaction that records the use, and the list reads that row alone.
@Suite(.serialized)
struct SessionLastUseTests {
    @Test(arguments: StoreBackend.allCases)
    func aChainFloodedWithRefusedProofsShowsItsLastUseFromItsOwnRow(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ServerProcess.eachRefusalAudited)
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let login = try server.boundLogin(device)
            let chain = try #require(ChainID(hex: login["chain_id"] as! String))
            let exchanged = try server.dpop("POST", "/v1/exchange", token: login["token"] as! String, device: device,
                                            headers: [("User-Agent", "Phone/2")])
            #expect(exchanged.status == 200, "\(exchanged.text)")
            let token = try #require(exchanged.json["token"] as? String)
            func lastUse() throws -> [String?] {
                let list = try server.dpop("GET", "/v1/sessions", token: token, device: device)
                let session = (list.json["sessions"] as? [[String: Any]])?.first
                return [session?["last_used_at"] as? String, session?["last_ip"] as? String, session?["last_user_agent"] as? String]
            }
            let used = try lastUse()
            #expect(used[1] == "127.0.0.1" && used[2] == "Phone/2", "\(used)")

            // The attack: the chain's token with proofs by other keys, each refused and audited.
            let flood = 200
            for _ in 0..<flood {
                let refused = try server.dpop("GET", "/v1/verify", token: token, device: Device(), headers: [("User-Agent", "Flood/1")])
                #expect(refused.status == 401 && refused.error == "invalid_dpop_proof")
            }
            let refusals = "SELECT count(*) FROM audit WHERE chain_id = \(chain.rawValue) AND kind = 'proof_failed'"
            let audited = try eventually(within: 10) { try queryDatabase(refusals, at: server.databasePath) == [[String(flood)]] }
            let counted = try queryDatabase(refusals, at: server.databasePath)
            #expect(audited, "\(counted)")
            #expect(try lastUse() == used)

            // The list does not read the audit at all: with every event of the chain deleted, it
            // shows the same (version 8's read found no use then: no address, no User-Agent).
            try server.executeSQL("DELETE FROM audit WHERE chain_id = \(chain.rawValue)")
            #expect(try queryDatabase("SELECT count(*) FROM audit WHERE chain_id = \(chain.rawValue)", at: server.databasePath) == [["0"]])
            #expect(try lastUse() == used)
            let (status, shown, problems) = try runBaton(["admin", "user", "show", "alice", "--db", server.databasePath])
            #expect(status == 0 && shown.contains("127.0.0.1") && shown.contains("Phone/2") && !shown.contains("Flood/1"), "\(shown)\(problems)")
        }
    }
}

import BatonCore
import Foundation
import Testing

/// Issue 28, findings 2b and 3: every refused proof of a bound chain was one durable audit
/// write (on the event loop for verify) and one `device.proof_rejected` webhook. Anyone holding
/// any token of a bound chain, a revoked one included, could flood both: 2,000 events in 0.8 s
/// delayed a real reuse alert by 45 s. Now a chain's refusals are coalesced per window (the
/// first written as it is, the rest as one event with a `count`), written off the request path.
@Suite struct DPoPRefusalAuditTests {
    /// The `proof_failed` events' `detail.count`s (1 for an event written before counts).
    static func counts(_ server: ServerProcess) throws -> [Int] {
        try server.auditEvents("proof_failed").map { (($0["detail"] as? [String: Any])?["count"] as? Int) ?? 1 }
    }

    @Test(arguments: StoreBackend.allCases)
    func aFloodOfRefusedProofsIsCoalescedPerChain(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--dpop-audit-window", "1h"] + ServerProcess.noRefusalBudget)
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let token = try server.boundLogin(device)["token"] as! String
            #expect(try server.dpop("POST", "/v1/logout", token: token, device: device).status == 204)
            // The revoked chain's token, with proofs by other keys: each refused, each audited.
            let flood = 200
            for index in 0..<flood {
                let path = index % 2 == 0 ? "/v1/verify" : "/v1/exchange"
                let answer = try server.dpop(index % 2 == 0 ? "GET" : "POST", path, token: token, device: Device())
                #expect(answer.status == 401 && answer.error == "invalid_dpop_proof")
            }
            // The first refusal is written (off the request path) at once; the other 199 wait for
            // the window's end (1 h here): one event, one webhook, not 200.
            let coalesced = try eventually { try Self.counts(server) == [1] }
            let counts = try Self.counts(server)
            #expect(coalesced, "\(counts)")
            let outbox = try queryDatabase("SELECT count(*) FROM webhook_outbox WHERE type = 'device.proof_rejected'", at: server.databasePath)
            #expect(outbox.first?.first == "1")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func theCountsAddUpToTheRefusals(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ["--dpop-audit-window", "300ms"] + ServerProcess.noRefusalBudget)
        try await offPool {
            try server.addUser("alice")
            let bundle = try server.boundLogin(Device())
            let token = bundle["token"] as! String, chain = bundle["chain_id"] as! String
            let started = Date()
            for _ in 0..<60 { #expect(try server.dpop("GET", "/v1/verify", token: token, device: Device()).status == 401) }
            let windows = Int(Date().timeIntervalSince(started) / 0.3) + 1
            // Each window: its first refusal and one event for the rest, whatever their number.
            let addsUp = try eventually(within: 10) { try Self.counts(server).reduce(0, +) == 60 }
            let counts = try Self.counts(server)
            #expect(addsUp && counts.count <= 2 * windows + 1, "\(counts), \(windows) windows")
            // The operator's incident view counts the refusals, not the events.
            let text = try runBaton(["admin", "chain", "show", chain, "--db", server.databasePath]).1
            #expect(text.contains("PROOF FAILED 60 times"), "\(text)")
            let json = try runBaton(["admin", "chain", "show", chain, "--format", "json", "--db", server.databasePath]).1
            #expect(json.contains(#""count":"#), "\(json)")
        }
    }
}

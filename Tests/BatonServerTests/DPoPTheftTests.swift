import BatonCore
import Foundation
import Testing

/// Issue 19's acceptance on a real server, both stores: a chain bound to a device key at
/// login (RFC 9449 DPoP) cannot be used, exchanged, retried or logged out with its token
/// alone, nothing changes in it when someone tries, and the key holder keeps working.
@Suite(.serialized)
struct DPoPTheftTests {
    /// The device-id takeover of issue 19, against a bound chain: the thief holds the old
    /// token (a byte-for-byte copy of the stored bundle) and the device id, not the key. The
    /// victim exchanges; the thief replays the old token with X-Device-Id from elsewhere,
    /// first as Bearer as before, then as DPoP with its own key. Before the fix the first got
    /// 200 `exchange_retried`; now both are 401 invalid_dpop_proof, nothing is revoked, no
    /// retry is recorded, and the victim's successor still works.
    @Test(arguments: StoreBackend.allCases)
    func deviceIDTakeoverOfABoundChainFails(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ServerProcess.eachRefusalAudited)
        try await offPool {
            try server.addUser("alice")
            let victim = Device(), thief = Device()
            let bundle = try server.boundLogin(victim)
            #expect(bundle["token_type"] as? String == "DPoP")
            let old = bundle["token"] as! String, chain = bundle["chain_id"] as! String
            let next = try server.dpop("POST", "/v1/exchange", token: old, device: victim)
            #expect(next.status == 200 && next.json["token_type"] as? String == "DPoP", "\(next.text)")

            let elsewhere: [(String, String)] = [("X-Device-Id", "phone-1"), ("User-Agent", "Thief/1"), ("X-Forwarded-For", "203.0.113.9")]
            let asBearer = try server.request("POST", "/v1/exchange", token: old, headers: elsewhere)
            let withOwnKey = try server.dpop("POST", "/v1/exchange", token: old, device: thief, headers: elsewhere)
            for answer in [asBearer, withOwnKey] {
                #expect(answer.status == 401 && answer.error == "invalid_dpop_proof", "\(answer.text)")
                #expect(answer.headers["www-authenticate"]?.hasPrefix(#"DPoP realm="baton", error="invalid_dpop_proof""#) == true)
            }
            #expect(try server.revocation(of: chain) == "live")
            #expect(try server.auditEvents("exchange_retried").isEmpty)
            #expect(try server.auditEvents("reuse_detected").isEmpty)
            #expect(try eventually { try server.proofFailureCount() == 2 })
            let failures = try server.auditEvents("proof_failed")
            #expect(failures.map { ($0["detail"] as? [String: Any])?["failure"] as? String } == ["bearer_for_bound_chain", "key_mismatch"])
            #expect(failures.allSatisfy { $0["ip"] as? String == "203.0.113.9" && $0["user_agent"] as? String == "Thief/1" })
            let successor = next.json["token"] as! String
            #expect(try server.dpop("GET", "/v1/verify", token: successor, device: victim).status == 200)
            #expect(try server.dpop("POST", "/v1/exchange", token: successor, device: victim).status == 200)
        }
    }

    /// A thief with a copy of the bundle but not the key: verify, exchange, the R3a retry and
    /// logout are all refused (401 invalid_dpop_proof, DPoP challenge), the victim keeps
    /// working, each refusal is audited `proof_failed` and counted, and nothing is revoked.
    @Test(arguments: StoreBackend.allCases)
    func aCopiedBundleWithoutTheKeyIsWorthless(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, ServerProcess.eachRefusalAudited)
        try await offPool {
            try server.addUser("alice")
            let victim = Device(), thief = Device()
            let bundle = try server.boundLogin(victim)
            let token = bundle["token"] as! String, chain = bundle["chain_id"] as! String

            let refused = [
                try server.request("GET", "/v1/verify", token: token),
                try server.dpop("GET", "/v1/verify", token: token, device: thief),
                try server.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", "phone-1")]),
                try server.dpop("POST", "/v1/exchange", token: token, device: thief),
                try server.request("POST", "/v1/logout", token: token),
                try server.dpop("POST", "/v1/logout", token: token, device: thief),
                try server.request("POST", "/v1/confirm", token: token, json: #"{"password":"correct horse battery"}"#),
                try server.request("GET", "/v1/sessions", token: token),
                // DPoP scheme without any proof.
                try server.request("GET", "/v1/verify", headers: [("Authorization", "DPoP " + token)]),
            ]
            for answer in refused {
                #expect(answer.status == 401 && answer.error == "invalid_dpop_proof", "\(answer.status) \(answer.text)")
                #expect(answer.headers["www-authenticate"]?.contains(#"algs="ES256 EdDSA""#) == true)
            }
            // The victim's token is untouched: never consumed, never marked presented by the
            // thief (so the victim's R3a still works), and it exchanges once.
            #expect(try queryDatabase("SELECT head_generation FROM chains WHERE id = \(ChainID(hex: chain)!.rawValue)", at: server.databasePath) == [["0"]])
            let next = try server.dpop("POST", "/v1/exchange", token: token, device: victim, headers: [("X-Device-Id", "phone-1")])
            #expect(next.status == 200, "\(next.text)")
            // The R3a retry of the consumed token by the thief, with the device id: refused.
            let retry = try server.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", "phone-1")])
            #expect(retry.status == 401 && retry.error == "invalid_dpop_proof")
            let successor = next.json["token"] as! String
            #expect(try server.dpop("GET", "/v1/verify", token: successor, device: victim).status == 200)
            let sessions = try server.dpop("GET", "/v1/sessions", token: successor, device: victim)
            #expect((sessions.json["sessions"] as? [[String: Any]])?.first?["bound"] as? Bool == true)

            #expect(try server.revocation(of: chain) == "live")
            #expect(try eventually { try server.proofFailureCount() == refused.count + 1 })  // and the R3a retry
            #expect(try server.auditEvents("chain_revoked").isEmpty && server.auditEvents("reuse_detected").isEmpty)
            let metrics = try server.request("GET", "/metrics").text
            #expect(metrics.contains(#"baton_dpop_proof_failures_total{failure="bearer_for_bound_chain"} 6"#), "\(metrics)")
            #expect(metrics.contains(#"baton_dpop_proof_failures_total{failure="key_mismatch"} 3"#))
            #expect(metrics.contains(#"baton_dpop_proof_failures_total{failure="proof_missing"} 1"#))
            // The operator sees the binding and the refused attempts, escaped like every field.
            let hostile = try server.request("GET", "/v1/verify", token: token, headers: [("User-Agent", "<script>alert(1)</script>")])
            #expect(hostile.status == 401)
            #expect(try eventually { try server.proofFailureCount() == 11 })
            let db = ["--db", server.databasePath]
            let jkt = victim.signer.thumbprint.text
            #expect(try runBaton(["admin", "chains"] + db).1.contains(jkt))
            let text = try runBaton(["admin", "chain", "show", chain] + db).1
            #expect(text.contains("; bound to key \(jkt) (DPoP)") && text.contains("PROOF FAILED 11 times"), "\(text)")
            #expect(text.contains("bearer_for_bound_chain") && text.contains("key_mismatch"))
            let html = try runBaton(["admin", "chain", "show", chain, "--format", "html"] + db).1
            #expect(html.contains("Proof failed") && html.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !html.contains("<script>"))
            let json = try runBaton(["admin", "chain", "show", chain, "--format", "json"] + db).1
            #expect(json.contains(#""jkt":"\#(jkt)""#) && json.contains(#""bound":true"#))
            // The victim can still log out with its key.
            #expect(try server.dpop("POST", "/v1/logout", token: successor, device: victim).status == 204)
            #expect(try server.revocation(of: chain) == "logout")
        }
    }

    /// A thief with the key and the token (a software key copied): the chain's rules are the
    /// defence then, as for a bearer chain: the consumed token presented after the victim used
    /// its successor is a reuse, and the chain is revoked.
    @Test(arguments: StoreBackend.allCases)
    func aThiefWithTheKeyIsCaughtByReuseDetection(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool {
            let device = Device()  // the victim's, copied
            let (old, chain, next) = try server.boundChainExchangedOnce(device)
            #expect(try server.dpop("GET", "/v1/verify", token: next.json["token"] as! String, device: device).status == 200)
            let reuse = try server.dpop("POST", "/v1/exchange", token: old, device: device, headers: [("User-Agent", "Thief/1")])
            #expect(reuse.status == 401 && reuse.error == "token_reused", "\(reuse.text)")
            #expect(try server.revocation(of: chain) == "reuse_detected")
        }
    }

    /// R3a for a bound chain: the answer of an exchange was lost and the device came back long
    /// after the short grace (the chain's head is moved 10 minutes into the past, as a phone
    /// suspended that long would find it). The retry with the key succeeds; the same retry
    /// without the key is refused, and an unbound chain in the same state is a reuse.
    @Test(arguments: StoreBackend.allCases)
    func aBoundRetryAfterTheGraceSucceedsWithTheKeyOnly(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend)
        try await offPool {
            let device = Device()
            let (old, chain, lost) = try server.boundChainExchangedOnce(device)
            #expect(lost.status == 200)
            try server.executeSQL("UPDATE chains SET head_issued_at = head_issued_at - 600000 WHERE id = \(ChainID(hex: chain)!.rawValue)")

            let withoutKey = try server.request("POST", "/v1/exchange", token: old, headers: [("X-Device-Id", "phone-1")])
            #expect(withoutKey.status == 401 && withoutKey.error == "invalid_dpop_proof")
            let retry = try server.dpop("POST", "/v1/exchange", token: old, device: device)
            #expect(retry.status == 200 && retry.json["generation"] as? Int == 1, "\(retry.text)")
            #expect(try server.auditEvents("exchange_retried").count == 1)
            #expect(try server.dpop("GET", "/v1/verify", token: retry.json["token"] as! String, device: device).status == 200)
            #expect(try server.revocation(of: chain) == "live")

            // The same state on a bearer chain: past the grace, the retry is a reuse.
            let bearer = try server.login("alice", device: "laptop-1")
            let bearerOld = bearer["token"] as! String, bearerChain = bearer["chain_id"] as! String
            #expect(try server.request("POST", "/v1/exchange", token: bearerOld, headers: [("X-Device-Id", "laptop-1")]).status == 200)
            try server.executeSQL("UPDATE chains SET head_issued_at = head_issued_at - 600000 WHERE id = \(ChainID(hex: bearerChain)!.rawValue)")
            let late = try server.request("POST", "/v1/exchange", token: bearerOld, headers: [("X-Device-Id", "laptop-1")])
            #expect(late.status == 401 && late.error == "token_reused")
        }
    }
}

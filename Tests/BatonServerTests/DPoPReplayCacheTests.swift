import BatonCore
import Foundation
import Testing

/// The replay cache (RFC 9449 §11.1) is bounded, and full it refuses every proof (503) rather
/// than forget one. The adversarial review found that every well-formed proof took a place,
/// before its key was compared with the chain's: anyone could make keys, sign proofs for a
/// made-up token and fill the cache (7,100 proofs a second for the default window, 140 with
/// `--dpop-window 1h`), and every bound client would get 503. Now a proof takes a place only
/// once its key proves to be the presented chain's, or, at a login, once the password is right.
@Suite struct DPoPReplayCacheTests {
    /// The server's `baton_dpop_replay_cache_entries`.
    static func entries(_ server: ServerProcess) throws -> Int? {
        let metrics = try server.request("GET", "/metrics").text
        return metrics.split(separator: "\n").first { $0.hasPrefix("baton_dpop_replay_cache_entries ") }
            .flatMap { Int($0.split(separator: " ")[1]) }
    }

    @Test func proofsByKeysOfAnyonesMakingTakeNoPlaceInTheReplayCache() async throws {
        let server = try await ServerProcess.start(on: .sqlite)
        try await offPool {
            try server.addUser("alice")
            let victim = Device()
            let token = try server.boundLogin(victim)["token"] as! String
            #expect(try Self.entries(server) == 1)  // the login's proof, after the right password

            var answers: [String] = []
            for _ in 0..<20 {  // a made-up token, each proof by a new key and otherwise good
                answers.append(try server.dpop("GET", "/v1/verify", token: "made-up", device: Device()).error ?? "200")
            }
            for path in ["/v1/verify", "/v1/sessions"] {  // the victim's real token, other keys
                for _ in 0..<10 { answers.append(try server.dpop("GET", path, token: token, device: Device()).error ?? "200") }
            }
            for _ in 0..<3 {  // logins with a good proof and a wrong password
                let login = try server.request("POST", "/v1/login", headers: [("DPoP", Device().proof("POST", "/v1/login"))],
                                               json: #"{"username":"alice","password":"wrong","device_id":"x","device_class":"web"}"#)
                answers.append(login.error ?? "200")
            }
            #expect(Set(answers) == ["token_invalid", "invalid_dpop_proof", "invalid_credentials"], "\(answers)")
            #expect(try Self.entries(server) == 1, "a refused proof took a place in the replay cache")

            // The victim's own proof takes one, and a replay of it is still refused.
            let headers = victim.headers("GET", "/v1/verify", token: token)
            #expect(try server.request("GET", "/v1/verify", headers: headers).status == 200)
            let replay = try server.request("GET", "/v1/verify", headers: headers)
            #expect(replay.status == 401 && replay.error == "invalid_dpop_proof" && replay.text.contains("used before"), "\(replay.text)")
            #expect(try Self.entries(server) == 2)
            #expect(try server.auditEvents("proof_failed").contains { ($0["detail"] as? [String: Any])?["failure"] as? String == "jti_replayed" })
        }
    }
}

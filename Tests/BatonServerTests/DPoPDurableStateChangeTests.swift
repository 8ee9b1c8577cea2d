import BatonCore
import Foundation
import Testing

/// Issue 28, findings 7 and 4: the proofs of a bound chain's confirm, sign-outs and of a verify
/// authorizing a state-changing request were remembered per process only. Captured whole (token
/// and proof) and replayed to another instance or after a restart within the proof window, a
/// revoke-others signed out a session created after the capture, and through the gateway a
/// `POST /api/transfer` ran twice. Now each is recorded in `proof_replays` like an exchange.
@Suite struct DPoPDurableStateChangeTests {
    /// SQLite: the server restarted. PostgreSQL: a second instance beside the first.
    static func elsewhere(_ first: ServerProcess, _ backend: StoreBackend) throws -> ServerProcess {
        if backend == .sqlite { _ = first.stop() }
        return try first.restarted()
    }

    @Test(arguments: StoreBackend.allCases)
    func aCapturedSignOutOrConfirmationReplayedElsewhereIsRefused(_ backend: StoreBackend) async throws {
        let first = try await ServerProcess.start(on: backend)
        let problems = try await offPool { () throws -> [String] in
            try first.addUser("alice")
            let device = Device()
            let token = try first.boundLogin(device)["token"] as! String
            let revokeOthers = device.headers("POST", "/v1/sessions/revoke-others", token: token)
            let confirm = device.headers("POST", "/v1/confirm", token: token)
            let password = #"{"password":"correct horse battery"}"#
            var problems: [String] = []
            let answers = [try first.request("POST", "/v1/sessions/revoke-others", headers: revokeOthers),
                           try first.request("POST", "/v1/confirm", headers: confirm, json: password)]
            if answers.map(\.status) != [200, 200] { return ["first: \(answers.map(\.text))"] }
            let other = try Self.elsewhere(first, backend)
            // A session created after the capture, on another device.
            let laptop = try other.boundLogin(Device(), deviceID: "laptop-1")["chain_id"] as! String
            let replays = [try other.request("POST", "/v1/sessions/revoke-others", headers: revokeOthers),
                           try other.request("POST", "/v1/confirm", headers: confirm, json: password)]
            for replay in replays where replay.status != 401 || replay.error != "invalid_dpop_proof" || !replay.text.contains("used before") {
                problems.append("replay: \(replay.status) \(replay.text)")
            }
            if try other.revocation(of: laptop) != "live" { problems.append("the later session: \(try other.revocation(of: laptop))") }
            // The device goes on: a fresh proof signs out the other session.
            let fresh = try other.dpop("POST", "/v1/sessions/revoke-others", token: token, device: device)
            if fresh.status != 200 { problems.append("the device's own sign-out: \(fresh.status) \(fresh.text)") }
            withExtendedLifetime(other) {}
            return problems
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// What the shipped nginx sends Baton for `POST /api/transfer` (auth_request): a verify with
    /// the original method and URI; the proof names them.
    static func transferVerify(_ device: Device, token: String) -> [(String, String)] {
        [("Authorization", "DPoP " + token), ("DPoP", device.proof("POST", "/api/transfer", token: token)),
         ("X-Original-Method", "POST"), ("X-Original-URI", "/api/transfer")]
    }

    @Test(arguments: StoreBackend.allCases)
    func aCapturedStateChangingRequestIsAuthorizedOnceAcrossInstances(_ backend: StoreBackend) async throws {
        let first = try await ServerProcess.start(on: backend)
        let problems = try await offPool { () throws -> [String] in
            try first.addUser("alice")
            let device = Device()
            let token = try first.boundLogin(device)["token"] as! String
            let captured = Self.transferVerify(device, token: token)
            let answer = try first.request("GET", "/v1/verify", headers: captured)
            guard answer.status == 200 else { return ["first: \(answer.status) \(answer.text)"] }
            let other = try Self.elsewhere(first, backend)
            var problems: [String] = []
            let replay = try other.request("GET", "/v1/verify", headers: captured)
            if replay.status != 401 || replay.error != "invalid_dpop_proof" || !replay.text.contains("used before") {
                problems.append("replay: \(replay.status) \(replay.text)")
            }
            let fresh = try other.request("GET", "/v1/verify", headers: Self.transferVerify(device, token: token))
            if fresh.status != 200 { problems.append("a fresh proof: \(fresh.status) \(fresh.text)") }
            withExtendedLifetime(other) {}
            return problems
        }
        #expect(problems.isEmpty, "\(problems)")
    }
}

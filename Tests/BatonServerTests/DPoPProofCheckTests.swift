import BatonCore
import BatonDPoP
import Foundation
import Testing

/// Each check of RFC 9449 §4.3 over HTTP, on a bound chain's verify (the token alone is
/// refused, so each row shows that one bent rule is enough), the nonce flow of §8 across two
/// instances, and the login's answers (`--dpop required`, a bad proof at login).
@Suite(.serialized)
struct DPoPProofCheckTests {
    /// One bent proof and the `failure` the metric must count for it.
    struct Bent: Sendable, CustomStringConvertible {
        var description: String
        var failure: String
        var proof: @Sendable (Device, String) -> String
    }

    static let path = "/v1/verify"

    static let bentProofs: [Bent] = [
        Bent(description: "wrong htm", failure: "htm_mismatch") { device, token in device.proof("POST", path, token: token) },
        Bent(description: "wrong htu", failure: "htu_mismatch") { device, token in device.proof("GET", "/v1/exchange", token: token) },
        Bent(description: "stale iat", failure: "iat_too_old") { device, token in device.proof("GET", path, token: token, age: 300) },
        Bent(description: "future iat", failure: "iat_in_future") { device, token in device.proof("GET", path, token: token, age: -300) },
        Bent(description: "wrong ath", failure: "ath_mismatch") { device, _ in device.proof("GET", path, token: "bt1_another") },
        Bent(description: "no ath", failure: "ath_missing") { device, _ in device.proof("GET", path) },
        Bent(description: "alg none", failure: "alg_not_allowed") { device, token in
            var header = device.header
            header["alg"] = .string("none")
            return Base64URL.encode(Array(JSONValue.object(header).text.utf8)) + "."
                + Base64URL.encode(Array(JSONValue.object(device.claims("GET", path, token: token)).text.utf8)) + "."
        },
        Bent(description: "HS256", failure: "alg_not_allowed") { device, token in
            var header = device.header
            header["alg"] = .string("HS256")
            header["jwk"] = .object(["kty": .string("oct"), "k": .string(Base64URL.encode(Array(repeating: 7, count: 32)))])
            return device.signer.sign(header: .object(header), claims: .object(device.claims("GET", path, token: token)))
        },
        // The chain's jwk, signed by another key. (Another jwk signed by the chain's key is
        // `key_mismatch` on verify, which compares the key before the signature: issue 28.)
        Bent(description: "jwk not the signer's", failure: "signature_invalid") { device, token in
            Device().signer.sign(header: .object(device.header), claims: .object(device.claims("GET", path, token: token)))
        },
        Bent(description: "private key in jwk", failure: "jwk_private_key") { device, token in
            var header = device.header
            guard case .object(var jwk) = device.signer.publicJWK, case .es256(let key) = device.signer.key else { return "" }
            jwk["d"] = .string(Base64URL.encode(key.scalar))
            header["jwk"] = .object(jwk)
            return device.signer.sign(header: .object(header), claims: .object(device.claims("GET", path, token: token)))
        },
        Bent(description: "no typ", failure: "typ_invalid") { device, token in
            var header = device.header
            header["typ"] = nil
            return device.signer.sign(header: .object(header), claims: .object(device.claims("GET", path, token: token)))
        },
    ]

    /// Every bent proof is refused 401 invalid_dpop_proof with the DPoP challenge, counted under
    /// its failure; the good proof after them all still works (nothing changed in the chain).
    /// Nonces off, so a stale or future `iat` is refused rather than answered use_dpop_nonce.
    @Test func eachProofCheckRefusesOverHTTP() async throws {
        let server = try await ServerProcess.start(on: .sqlite, ["--dpop-nonce", "off"] + ServerProcess.eachRefusalAudited)
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let token = try server.boundLogin(device)["token"] as! String
            var problems: [String] = []
            for bent in Self.bentProofs {
                let answer = try server.request("GET", Self.path, headers: [("Authorization", "DPoP " + token), ("DPoP", bent.proof(device, token))])
                if answer.status != 401 || answer.error != "invalid_dpop_proof"
                    || answer.headers["www-authenticate"]?.hasPrefix(#"DPoP realm="baton", error="invalid_dpop_proof""#) != true {
                    problems.append("\(bent): \(answer.status) \(answer.text)")
                }
            }
            // A replayed jti: the same good proof twice.
            let proof = device.proof("GET", Self.path, token: token)
            let first = try server.request("GET", Self.path, headers: [("Authorization", "DPoP " + token), ("DPoP", proof)])
            let again = try server.request("GET", Self.path, headers: [("Authorization", "DPoP " + token), ("DPoP", proof)])
            if first.status != 200 || again.status != 401 || again.error != "invalid_dpop_proof" { problems.append("replay: \(first.status) \(again.status)") }
            // Two DPoP headers (RFC 9449 §4.3 check 1).
            let two = try server.request("GET", Self.path, headers: [("Authorization", "DPoP " + token), ("DPoP", device.proof("GET", Self.path, token: token)),
                                                                    ("DPoP", device.proof("GET", Self.path, token: token))])
            if two.status != 401 || two.error != "invalid_dpop_proof" { problems.append("two headers: \(two.status)") }
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

            let metrics = try server.request("GET", "/metrics").text
            for failure in Set(Self.bentProofs.map(\.failure)) + ["jti_replayed", "multiple_proofs"] {
                #expect(metrics.contains(#"baton_dpop_proof_failures_total{failure="\#(failure)"}"#), "\(failure)")
            }
            #expect(try eventually { try server.proofFailureCount() == Self.bentProofs.count + 2 })
            #expect(try server.dpop("GET", Self.path, token: token, device: device).status == 200)
        }
    }

    /// §8 nonces, `--dpop-nonce when-clock-off` (the default), two instances on one database
    /// and key: a proof from a device whose clock is 5 minutes slow is answered use_dpop_nonce
    /// with a DPoP-Nonce (400 at login, 401 otherwise); the same stale clock with the nonce
    /// is accepted, by the instance that issued it and by the other.
    @Test(arguments: StoreBackend.allCases)
    func aDeviceWithAWrongClockGetsANonceThatEveryInstanceAccepts(_ backend: StoreBackend) async throws {
        let first = try await ServerProcess.start(on: backend)
        try await offPool {
            let keyFile = first.arguments.firstIndex(of: "--key-file").map { first.arguments[$0 + 1] } ?? first.databasePath + ".key"
            let second = try ServerProcess(["--key-file", keyFile], database: first.databasePath)
            try first.addUser("alice")
            let device = Device()
            let stale = try first.request("POST", "/v1/login", headers: [("DPoP", device.proof("POST", "/v1/login", age: 300))], json: ServerProcess.loginJSON)
            #expect(stale.status == 400 && stale.error == "use_dpop_nonce", "\(stale.text)")
            let nonce = try #require(stale.headers["dpop-nonce"])
            let login = try second.request("POST", "/v1/login", headers: [("DPoP", device.proof("POST", "/v1/login", nonce: nonce, age: 300))],
                                           json: ServerProcess.loginJSON)
            #expect(login.status == 200 && login.json["token_type"] as? String == "DPoP", "\(login.text)")
            let token = login.json["token"] as! String

            let verify = try second.request("GET", "/v1/verify", headers: [("Authorization", "DPoP " + token),
                                                                            ("DPoP", device.proof("GET", "/v1/verify", token: token, age: 300))])
            #expect(verify.status == 401 && verify.error == "use_dpop_nonce")
            #expect(verify.headers["www-authenticate"]?.contains(#"error="use_dpop_nonce""#) == true)
            let secondNonce = try #require(verify.headers["dpop-nonce"])
            for (server, nonce) in [(first, secondNonce), (second, nonce)] {
                let answer = try server.request("GET", "/v1/verify", headers: [("Authorization", "DPoP " + token),
                                                                               ("DPoP", device.proof("GET", "/v1/verify", token: token, nonce: nonce, age: 300))])
                #expect(answer.status == 200, "\(answer.text)")
            }
            // A nonce round trip is not an attack: no proof_failed.
            #expect(try first.auditEvents("proof_failed").isEmpty)
        }
    }

    /// `--dpop required`: a login without a proof is 400 dpop_required; with one it is bound.
    /// A bad proof at login is 400 invalid_dpop_proof, and no chain is created.
    @Test func requiredBindingRefusesALoginWithoutAProof() async throws {
        let server = try await ServerProcess.start(on: .sqlite, ["--dpop", "required"])
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let plain = try server.request("POST", "/v1/login", json: ServerProcess.loginJSON)
            #expect(plain.status == 400 && plain.error == "dpop_required", "\(plain.text)")
            let bent = try server.request("POST", "/v1/login", headers: [("DPoP", device.proof("POST", "/v1/exchange"))], json: ServerProcess.loginJSON)
            #expect(bent.status == 400 && bent.error == "invalid_dpop_proof" && bent.headers["www-authenticate"] == nil, "\(bent.text)")
            #expect(try queryDatabase("SELECT count(*) FROM chains", at: server.databasePath) == [["0"]])
            let bound = try server.boundLogin(device)
            #expect(bound["token_type"] as? String == "DPoP")
            let jkt = device.signer.thumbprint.text
            #expect(try queryDatabase("SELECT jkt FROM chains", at: server.databasePath) == [[jkt]])
        }
    }

    /// `--dpop off`: a login's proof is ignored (a bearer chain); a bearer chain presented as
    /// DPoP is refused (`session_not_bound`), and as Bearer works.
    @Test func offIgnoresTheLoginProofAndBearerChainsStayBearer() async throws {
        let server = try await ServerProcess.start(on: .sqlite, ["--dpop", "off"])
        try await offPool {
            try server.addUser("alice")
            let device = Device()
            let bundle = try server.boundLogin(device)
            #expect(bundle["token_type"] as? String == "Bearer")
            let token = bundle["token"] as! String
            let asDPoP = try server.dpop("GET", "/v1/verify", token: token, device: device)
            #expect(asDPoP.status == 401 && asDPoP.error == "invalid_dpop_proof")
            #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
            #expect(try server.auditEvents("proof_failed").isEmpty)
        }
    }
}

import BatonCore
import BatonDPoP
import Foundation

/// A device with its own P-256 key, as the tests' clients: it signs a fresh proof for each
/// request (RFC 9449 §4.2) and presents a bound token as `Authorization: DPoP`.
struct Device: Sendable {
    let signer = ProofSigner(.es256(ES256SigningKey.generate()))

    /// The `htu` the server derives for the tests' requests (`Host: 127.0.0.1`, no --public-url).
    static let origin = "http://127.0.0.1"

    /// A proof for `method` on `path`, presenting `token`, issued `age` ago.
    func proof(_ method: String, _ path: String, token: String? = nil, nonce: String? = nil, age: Int64 = 0) -> String {
        signer.proof(method: method, url: Self.origin + path, token: token, nonce: nonce, now: SystemClock().now() - .seconds(age))
    }

    /// The headers of a request presenting `token` as DPoP with a proof for it.
    func headers(_ method: String, _ path: String, token: String, nonce: String? = nil) -> [(String, String)] {
        [("Authorization", "DPoP " + token), ("DPoP", proof(method, path, token: token, nonce: nonce))]
    }

    /// The claims of a good proof, to bend one at a time.
    func claims(_ method: String, _ path: String, token: String?) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "jti": .string(Base64URL.encode(SecureRandom.bytes(16))), "htm": .string(method),
            "htu": .string(Self.origin + path), "iat": .int(SystemClock().now().epochSeconds),
        ]
        if let token { claims["ath"] = .string(Base64URL.encode(TokenHash(of: token).bytes)) }
        return claims
    }

    /// The header of a good proof, to bend one member at a time.
    var header: [String: JSONValue] { ["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": signer.publicJWK] }
}

extension ServerProcess {
    static let loginJSON = #"{"username":"alice","password":"correct horse battery","device_id":"phone-1","device_class":"mobile"}"#

    /// A login with `device`'s proof: the chain is bound to its key.
    func boundLogin(_ device: Device, deviceID: String = "phone-1") throws -> [String: Any] {
        let response = try request("POST", "/v1/login", headers: [("DPoP", device.proof("POST", "/v1/login"))],
                                   json: #"{"username":"alice","password":"correct horse battery","device_id":"\#(deviceID)","device_class":"mobile"}"#)
        guard response.status == 200 else { throw ServerError.didNotStart("bound login failed: \(response.status) \(response.text)") }
        return response.json
    }

    /// alice (created here) logged in bound to `device`, and her first token exchanged with a
    /// proof: the consumed token, the chain, and the exchange's answer.
    func boundChainExchangedOnce(_ device: Device) throws -> (old: String, chain: String, next: HTTPConnection.Response) {
        try addUser("alice")
        let bundle = try boundLogin(device)
        let old = bundle["token"] as! String
        return (old, bundle["chain_id"] as! String, try dpop("POST", "/v1/exchange", token: old, device: device))
    }

    /// `method` on `path` presenting `token` as DPoP with `device`'s proof.
    func dpop(_ method: String, _ path: String, token: String, device: Device, headers: [(String, String)] = [],
              json: String? = nil) throws -> HTTPConnection.Response {
        try request(method, path, headers: device.headers(method, path, token: token) + headers, json: json)
    }

    /// The audit events of `kind` as JSON objects (the admin CLI's `--format json`).
    func auditEvents(_ kind: String) throws -> [[String: Any]] {
        try runBaton(["admin", "audit", "--kind", kind, "--format", "json", "--db", databasePath]).1.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// The refused proofs the audit trail accounts for: the `proof_failed` events' `detail.count`s
    /// added up (a chain's refusals are coalesced per `--dpop-audit-window`, and written off the
    /// request path, so a test awaits them).
    func proofFailureCount() throws -> Int {
        try auditEvents("proof_failed").reduce(0) { $0 + ((($1["detail"] as? [String: Any])?["count"] as? Int) ?? 1) }
    }

    /// The tests that look at each refusal's event run without coalescing (one event each) and
    /// without a chain's budget of refused proofs (every proof is checked and audited).
    static let eachRefusalAudited = ["--dpop-audit-window", "0"] + noRefusalBudget

    /// No budget of refused proofs per chain (`--dpop-refusal-burst 0`), for tests whose floods
    /// must reach the checks behind it (DPoPRefusalBudgetTests has the budget itself).
    static let noRefusalBudget = ["--dpop-refusal-burst", "0"]

    /// The chain's `revoked_reason` ("live" while it lives).
    func revocation(of chain: String) throws -> String {
        try queryDatabase("SELECT coalesce(revoked_reason, 'live') FROM chains WHERE id = \(ChainID(hex: chain)!.rawValue)", at: databasePath).first?.first ?? "?"
    }
}

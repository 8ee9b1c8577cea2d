import BatonCore
@testable import BatonDPoP

/// One request and a key to prove it with, at a fixed instant: each test changes one thing.
struct ProofFixture {
    static let now = Instant(milliseconds: 1_790_000_000_000)
    static let url = "https://baton.example/v1/exchange"
    static let token = "bt1_" + String(repeating: "A", count: 80)

    var signer = ProofSigner(.es256(.generate()))
    var policy = ProofPolicy()

    /// The claims of a valid proof for the exchange request, at `now`.
    func claims(iat: Instant = now, token: String? = token) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "jti": .string(Base64URL.encode(SecureRandom.bytes(16))),
            "htm": .string("POST"),
            "htu": .string(Self.url),
            "iat": .int(iat.epochSeconds),
        ]
        if let token { claims["ath"] = .string(Base64URL.encode(TokenHash(of: token).bytes)) }
        return claims
    }

    /// The header of a valid proof by `signer`.
    var header: [String: JSONValue] {
        ["typ": .string("dpop+jwt"), "alg": .string(signer.algorithm.rawValue), "jwk": signer.publicJWK]
    }

    /// A proof with `header` and `claims` (the valid ones unless given), signed by `signer`.
    func proof(header: [String: JSONValue]? = nil, claims: [String: JSONValue]? = nil) -> String {
        signer.sign(header: .object(header ?? self.header), claims: .object(claims ?? self.claims()))
    }

    /// Checks `proof` as the exchange request with the fixture's token would, without replay memory.
    func verify(_ proof: String, method: String = "POST", url: String = url, token: String? = token,
                now: Instant = now) throws(ProofError) -> DPoPProof {
        try DPoPProof.verify(proof, method: method, url: url, tokenHash: token.map(TokenHash.init(of:)), now: now, policy: policy)
    }

    /// The error `verify` throws for `proof`, or nil when it is accepted.
    func failure(_ proof: String, method: String = "POST", url: String = url, token: String? = token,
                 now: Instant = now) -> ProofError? {
        do {
            _ = try verify(proof, method: method, url: url, token: token, now: now)
            return nil
        } catch {
            return error
        }
    }
}

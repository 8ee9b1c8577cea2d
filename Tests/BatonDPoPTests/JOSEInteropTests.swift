import BatonCore
@testable import BatonDPoP
import BatonTestSupport
import Foundation
import Testing

/// Interoperability with an independent JOSE implementation: proofs joserfc makes are
/// accepted, with the thumbprint joserfc computes; proofs Baton's signer makes verify with
/// joserfc. The Python side (scripts/dpop_interop.py) imports nothing of Baton.
@Suite(.enabled(if: josePython != nil, "needs joserfc from PyPI: ./scripts/jose-venv (./scripts/test runs it)"))
struct JOSEInteropTests {
    let now = SystemClock().now()

    /// Runs scripts/dpop_interop.py `mode` on `cases`; its JSON answer, one object per case.
    private func interop(_ mode: String, _ cases: [JSONValue]) throws -> [[String: Any]] {
        let input = JSONValue.object(["cases": .array(cases)]).text
        let output = try runCommand(josePython!, [repositoryRoot + "/scripts/dpop_interop.py", mode, input])
        try #require(output.status == 0, "dpop_interop.py \(mode) failed: \(output.stderr)")
        let answer = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]]
        return try #require(answer, "dpop_interop.py \(mode) printed \(output.stdout)")
    }

    @Test func proofsMadeByJoserfcAreAccepted() throws {
        let requests: [(alg: String, method: String, url: String, token: String?)] = [
            ("ES256", "POST", "https://baton.example/v1/exchange", ProofFixture.token),
            ("ES256", "POST", "https://baton.example/v1/login", nil),
            ("EdDSA", "GET", "https://baton.example/v1/verify", ProofFixture.token),
            ("Ed25519", "POST", "https://baton.example/v1/logout", ProofFixture.token),
        ]
        let cases = requests.map { request -> JSONValue in
            .object(["alg": .string(request.alg), "htm": .string(request.method), "htu": .string(request.url),
                     "iat": .int(now.epochSeconds), "token": .optional(request.token)])
        }
        let made = try interop("sign", cases)
        let checker = ProofChecker(policy: ProofPolicy())
        for (request, answer) in zip(requests, made) {
            let proof = try #require(answer["proof"] as? String)
            let thumbprint = try checker.check(proof, method: request.method, url: request.url,
                                               tokenHash: request.token.map(TokenHash.init(of:)), now: now)
            #expect(thumbprint.text == answer["jkt"] as? String, "\(request.alg)")
            // And the same proof is refused for another request: the check is not a rubber stamp.
            #expect(throws: ProofError.self) {
                try DPoPProof.verify(proof, method: "DELETE", url: request.url, tokenHash: nil, now: now, policy: ProofPolicy())
            }
        }
    }

    @Test func proofsMadeByBatonVerifyWithJoserfc() throws {
        let signers = [ProofSigner(.es256(.generate())), ProofSigner(.ed25519(.generate(), algorithm: .ed25519))]
        let url = "https://baton.example/v1/exchange"
        let proofs = signers.map { $0.proof(method: "POST", url: url + "?ignored=1", token: ProofFixture.token, now: now) }
        var cases = proofs.map { proof -> JSONValue in
            .object(["proof": .string(proof), "htm": .string("POST"), "htu": .string(url), "token": .string(ProofFixture.token)])
        }
        // Controls: joserfc must refuse a proof for another token and a proof with a forged signature.
        cases.append(.object(["proof": .string(proofs[0]), "htm": .string("POST"), "htu": .string(url), "token": .string("bt1_other")]))
        let forged = proofs[0].dropLast(2) + (proofs[0].hasSuffix("AA") ? "BA" : "AA")
        cases.append(.object(["proof": .string(String(forged)), "htm": .string("POST"), "htu": .string(url), "token": .string(ProofFixture.token)]))

        let answers = try interop("verify", cases)
        for (signer, answer) in zip(signers, answers) {
            #expect(answer["ok"] as? Bool == true, "\(answer)")
            #expect(answer["jkt"] as? String == signer.thumbprint.text)
        }
        #expect(answers[2]["ok"] as? Bool == false && answers[2]["error"] as? String == "ath")
        #expect(answers[3]["ok"] as? Bool == false, "\(answers[3])")
    }
}

import BatonCore
@testable import BatonDPoP
import Testing

/// What is refused before any key is looked at: the compact form, the JSON, the length.
struct ProofFormTests {
    let fixture = ProofFixture()

    private func part(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }

    @Test(arguments: [
        ("", ProofError.malformed(part: "compact form (fewer than three parts)")),
        ("a.b", .malformed(part: "compact form (fewer than three parts)")),
        ("a.b.c.d", .malformed(part: "compact form (more than three parts)")),
        (".e30.", .malformed(part: "header")),
        ("e30..", .malformed(part: "payload")),
        ("e30=.e30.", .malformed(part: "header")),  // padding is not base64url
        ("e30.e30.!!", .malformed(part: "signature")),
        ("W10.e30.", .malformed(part: "header")),  // [] is not an object
        ("e30.bnVsbA.", .malformed(part: "payload")),  // null
    ])
    func malformedCompactFormIsRefused(_ text: String, _ error: ProofError) {
        #expect(fixture.failure(text) == error)
    }

    @Test func duplicateHeaderMemberIsRefused() {
        // Which alg would a reader pick? Neither: the proof is refused.
        let header = part(#"{"typ":"dpop+jwt","alg":"ES256","alg":"none","jwk":{}}"#)
        #expect(fixture.failure(header + "." + part("{}") + ".") == .duplicateMember(part: "header", name: "alg"))
    }

    @Test func duplicateClaimIsRefusedEvenWhenEscaped() {
        let header = Base64URL.encode(Array(JSONValue.object(fixture.header).text.utf8))
        let claims = part(#"{"jti":"a","htm":"POST","ht\u0075":"x","htu":"y","iat":1}"#)
        let proof = fixture.signer.sign(encodedHeader: header, encodedClaims: claims)
        #expect(fixture.failure(proof) == .duplicateMember(part: "payload", name: "htu"))
    }

    @Test func overlongProofIsRefusedBeforeParsing() {
        let long = String(repeating: "A", count: 8193)
        #expect(fixture.failure(long) == .tooLong(limit: 8192))
    }

    @Test func signatureOfTheWrongLengthIsRefused() {
        let proof = fixture.proof()
        let cut = proof.dropLast(6)  // 60 bytes of signature
        #expect(fixture.failure(String(cut)) == .badSignature)
    }

    @Test func derSignatureIsRefused() {
        // ES256 signatures are r ‖ s, not the DER libcrypto's ECDSA_sign writes (RFC 7518 §3.4).
        let parts = fixture.proof().split(separator: ".").map(String.init)
        let raw = Base64URL.decode(Array(parts[2].utf8))!
        var der: [UInt8] = [0x30, 0x44, 0x02, 0x20] + raw[0..<32] + [0x02, 0x20] + raw[32..<64]
        der[1] = UInt8(der.count - 2)
        #expect(fixture.failure(parts[0] + "." + parts[1] + "." + Base64URL.encode(der)) == .badSignature)
    }
}

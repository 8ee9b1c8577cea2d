import BatonCore
@testable import BatonDPoP
import Testing

/// Issue 28, finding 5: RFC 8032 §5.1.7's strict checks on an Ed25519 proof key. libcrypto
/// verified a proof by the identity key (`01 00…00`) with the constant signature R = identity,
/// S = 0, whatever the message: a chain bound to it bound nothing.
struct Ed25519StrictTests {
    static let p: [UInt8] = [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F]

    /// Every small-order encoding (libsodium's blocklist), with the sign bit clear and set.
    static let smallOrder: [[UInt8]] = Ed25519Point.smallOrder.flatMap { [$0, $0.prefix(31) + [$0[31] | 0x80]] }

    /// y = p … p + 18 (every y ≥ p that fits 255 bits), with either sign bit.
    static let nonCanonical: [[UInt8]] = (0..<19).flatMap { (k: UInt8) -> [[UInt8]] in
        var y = p
        y[0] = 0xED + k
        return [y, y.prefix(31) + [0xFF]]
    }

    static func jwk(_ x: [UInt8]) -> [String: JSONNode] {
        ["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(Base64URL.encode(x))]
    }

    /// A proof by the key `x` whose signature is R = the identity, S = 0.
    static func constantSignatureProof(x: [UInt8]) -> String {
        let fixture = ProofFixture()
        let header: JSONValue = .object(["typ": .string("dpop+jwt"), "alg": .string("EdDSA"),
                                         "jwk": .object(["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(Base64URL.encode(x))])])
        let input = Base64URL.encode(Array(header.text.utf8)) + "." + Base64URL.encode(Array(JSONValue.object(fixture.claims()).text.utf8))
        return input + "." + Base64URL.encode([1] + [UInt8](repeating: 0, count: 63))
    }

    @Test func theIdentityKeysConstantSignatureIsRefused() {
        let identity = [1] + [UInt8](repeating: 0, count: 31)
        let failure = ProofFixture().failure(Self.constantSignatureProof(x: identity))
        #expect(failure == .invalidKey(reason: "x is not a strictly valid Ed25519 point (RFC 8032 §5.1.7)"), "\(String(describing: failure))")
    }

    @Test(arguments: smallOrder)
    func smallOrderKeyIsRefused(_ x: [UInt8]) {
        #expect(throws: ProofError.invalidKey(reason: "x is not a strictly valid Ed25519 point (RFC 8032 §5.1.7)")) {
            try ProofKey(jwk: Self.jwk(x), algorithm: .edDSA)
        }
    }

    @Test(arguments: nonCanonical)
    func nonCanonicalKeyIsRefused(_ x: [UInt8]) {
        #expect(throws: ProofError.invalidKey(reason: "x is not a strictly valid Ed25519 point (RFC 8032 §5.1.7)")) {
            try ProofKey(jwk: Self.jwk(x), algorithm: .ed25519)
        }
    }

    @Test func realKeysAndTheLargestCanonicalYAreAccepted() throws {
        for _ in 0..<64 { #expect(Ed25519Point.isStrictlyValid(Ed25519SigningKey.generate().x)) }
        var below = Self.p
        below[0] = 0xEB  // p − 2: canonical (whether it is a point is libcrypto's to say)
        #expect(Ed25519Point.isCanonical(below) && !Ed25519Point.hasSmallOrder(below))
    }

    @Test func smallOrderSignaturePointIsRefused() {
        // A real key, a signature whose R is small-order: refused before libcrypto.
        let key = try! ProofKey(jwk: Self.jwk(Ed25519SigningKey.generate().x), algorithm: .edDSA)
        for r in Self.smallOrder { #expect(try! key.verifies(r + [UInt8](repeating: 0, count: 32), of: [1, 2, 3]) == false) }
    }
}

import BatonCore
@testable import BatonDPoP
import CCrypto
import Testing

/// The `jwk`: only public keys of the proof's algorithm, P-256 points on the curve, and the
/// EdDSA path.
struct ProofKeyTests {
    @Test(arguments: [ProofAlgorithm.edDSA, .ed25519])
    func ed25519ProofIsAccepted(_ algorithm: ProofAlgorithm) throws {
        var fixture = ProofFixture()
        fixture.signer = ProofSigner(.ed25519(.generate(), algorithm: algorithm))
        let proof = fixture.signer.proof(method: "POST", url: ProofFixture.url, token: ProofFixture.token, now: ProofFixture.now)
        #expect(try fixture.verify(proof).thumbprint == fixture.signer.thumbprint)
    }

    @Test func ed25519ProofWithAnotherKeyIsRefused() {
        var fixture = ProofFixture()
        fixture.signer = ProofSigner(.ed25519(.generate()))
        var header = fixture.header
        header["jwk"] = Ed25519SigningKey.generate().publicJWK
        #expect(fixture.failure(fixture.proof(header: header)) == .badSignature)
    }

    @Test func algorithmOutsideThePolicyIsRefused() {
        var fixture = ProofFixture()
        fixture.signer = ProofSigner(.ed25519(.generate()))
        fixture.policy.algorithms = [.es256]
        #expect(fixture.failure(fixture.proof()) == .algorithmNotAllowed("EdDSA"))
    }

    @Test func keyOfAnotherTypeThanTheAlgorithmIsRefused() {
        let fixture = ProofFixture()
        var header = fixture.header
        header["jwk"] = Ed25519SigningKey.generate().publicJWK
        #expect(fixture.failure(fixture.proof(header: header)) == .invalidKey(reason: "kty must be EC"))
        guard case .object(var jwk) = fixture.signer.publicJWK else { return }
        jwk["crv"] = .string("P-384")
        header["jwk"] = .object(jwk)
        #expect(fixture.failure(fixture.proof(header: header)) == .invalidKey(reason: "crv must be P-256"))
    }

    private func jwk(x: [UInt8], y: [UInt8]) -> [String: JSONNode] {
        ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(Base64URL.encode(x)), "y": .string(Base64URL.encode(y))]
    }

    @Test func pointOffTheCurveIsRefused() throws {
        let key = ES256SigningKey.generate()
        var y = key.y
        y[31] ^= 1
        let proofKey = try ProofKey(jwk: jwk(x: key.x, y: y), algorithm: .es256)
        #expect(throws: ProofError.invalidKey(reason: "the point is not on the curve")) {
            try proofKey.verifies([UInt8](repeating: 1, count: 64), of: [1, 2, 3])
        }
    }

    @Test func coordinateAtOrAboveThePrimeIsRefused() throws {
        // p itself: x ≡ 0 (mod p) would be accepted by a check that reduces first.
        let p: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 12) + [UInt8](repeating: 0xFF, count: 12)
        let proofKey = try ProofKey(jwk: jwk(x: p, y: ES256SigningKey.generate().y), algorithm: .es256)
        #expect(throws: ProofError.invalidKey(reason: "the point is not on the curve")) {
            try proofKey.verifies([UInt8](repeating: 1, count: 64), of: [])
        }
    }

    @Test(arguments: [31, 33])
    func coordinateOfTheWrongLengthIsRefused(_ length: Int) {
        let key = ES256SigningKey.generate()
        #expect(throws: ProofError.invalidKey(reason: "x must be 32 bytes in base64url")) {
            try ProofKey(jwk: jwk(x: [UInt8](repeating: 0, count: 1) + key.x.prefix(length - 1), y: key.y), algorithm: .es256)
        }
    }

    /// Two keys whose points share a slot of the verifier's key cache (`jose.h`), found by
    /// generating keys until two collide (2,048 slots: a few dozen keys).
    private func keysSharingACacheSlot() -> (ES256SigningKey, ES256SigningKey) {
        var bySlot: [Int: ES256SigningKey] = [:]
        while true {
            let key = ES256SigningKey.generate()
            let slot = baton_p256_cache_index(key.x, key.y)
            if let other = bySlot[slot] { return (other, key) }
            bySlot[slot] = key
        }
    }

    @Test func keysSharingACacheSlotNeverStandForEachOther() throws {
        let (first, second) = keysSharingACacheSlot()
        let message = Array("the signing input".utf8)
        let byFirst = first.sign(message), bySecond = second.sign(message)
        let firstKey = ProofKey.p256(x: first.x, y: first.y), secondKey = ProofKey.p256(x: second.x, y: second.y)
        // Each verification replaces the other key in the slot; each must still use its own.
        for _ in 0..<3 {
            #expect(try firstKey.verifies(byFirst, of: message))
            #expect(try !secondKey.verifies(byFirst, of: message))
            #expect(try secondKey.verifies(bySecond, of: message))
            #expect(try !firstKey.verifies(bySecond, of: message))
        }
    }

    @Test func pointOffTheCurveInACachedKeysSlotIsRefused() throws {
        let key = ES256SigningKey.generate()
        let message = Array("the signing input".utf8)
        let signature = key.sign(message)
        #expect(try ProofKey.p256(x: key.x, y: key.y).verifies(signature, of: message))  // cached now
        var y = key.y
        y[0] ^= 1  // the same slot (it is chosen by the last bytes), and off the curve
        #expect(baton_p256_cache_index(key.x, y) == baton_p256_cache_index(key.x, key.y))
        for _ in 0..<2 {
            #expect(throws: ProofError.invalidKey(reason: "the point is not on the curve")) {
                try ProofKey.p256(x: key.x, y: y).verifies(signature, of: message)
            }
        }
        #expect(try ProofKey.p256(x: key.x, y: key.y).verifies(signature, of: message))
    }

    @Test func storedScalarGivesTheSameKey() throws {
        let key = ES256SigningKey.generate()
        let again = try #require(ES256SigningKey(scalar: key.scalar))
        #expect(again.x == key.x && again.y == key.y)
        #expect(ES256SigningKey(scalar: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(ES256SigningKey(scalar: [UInt8](repeating: 0xFF, count: 32)) == nil)  // above the order n
    }
}

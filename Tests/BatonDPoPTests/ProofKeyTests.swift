import BatonCore
@testable import BatonDPoP
import CCrypto
import Dispatch
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

    /// Each thread verifies with one key object and sets each proof's point into it
    /// (`baton_p256_thread_key`): a point must never outlive its own verification.
    @Test func keysVerifiedInTurnOnOneThreadNeverStandForEachOther() throws {
        let first = ES256SigningKey.generate(), second = ES256SigningKey.generate()
        let message = Array("the signing input".utf8)
        let byFirst = first.sign(message), bySecond = second.sign(message)
        let firstKey = ProofKey.p256(x: first.x, y: first.y), secondKey = ProofKey.p256(x: second.x, y: second.y)
        for _ in 0..<3 {
            #expect(try firstKey.verifies(byFirst, of: message))
            #expect(try !secondKey.verifies(byFirst, of: message))
            #expect(try secondKey.verifies(bySecond, of: message))
            #expect(try !firstKey.verifies(bySecond, of: message))
        }
    }

    @Test func pointOffTheCurveAfterAGoodOneIsRefusedNotVerifiedWithTheGoodOne() throws {
        let key = ES256SigningKey.generate()
        let message = Array("the signing input".utf8)
        let signature = key.sign(message)
        #expect(try ProofKey.p256(x: key.x, y: key.y).verifies(signature, of: message))  // the thread's key holds it now
        var y = key.y
        y[0] ^= 1  // off the curve
        for _ in 0..<2 {
            #expect(throws: ProofError.invalidKey(reason: "the point is not on the curve")) {
                try ProofKey.p256(x: key.x, y: y).verifies(signature, of: message)
            }
        }
        var x = key.x
        x[31] ^= 1  // off the curve too, by the other coordinate
        #expect(throws: ProofError.invalidKey(reason: "the point is not on the curve")) {
            try ProofKey.p256(x: x, y: key.y).verifies(signature, of: message)
        }
        #expect(try ProofKey.p256(x: key.x, y: key.y).verifies(signature, of: message))
    }

    /// Threads verifying at once, each with keys of its own and each other's signatures:
    /// every answer is the one its own key gives.
    @Test func threadsVerifyingAtOnceEachUseTheirOwnPoint() {
        let message = Array("the signing input".utf8)
        let keys = (0..<8).map { _ in ES256SigningKey.generate() }
        let signatures = keys.map { $0.sign(message) }
        // One counter per thread, each written by its own thread only.
        nonisolated(unsafe) let mistakesByThread = UnsafeMutableBufferPointer<Int>.allocate(capacity: 4)
        mistakesByThread.initialize(repeating: 0)
        defer { mistakesByThread.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            var mistakes = 0
            for round in 0..<200 {
                let index = (thread + round) % keys.count
                let other = (index + 1 + round % (keys.count - 1)) % keys.count
                let key = ProofKey.p256(x: keys[index].x, y: keys[index].y)
                if (try? key.verifies(signatures[index], of: message)) != true { mistakes += 1 }
                if (try? key.verifies(signatures[other], of: message)) != false { mistakes += 1 }
            }
            mistakesByThread[thread] = mistakes
        }
        #expect(mistakesByThread.reduce(0, +) == 0)
    }

    @Test func storedScalarGivesTheSameKey() throws {
        let key = ES256SigningKey.generate()
        let again = try #require(ES256SigningKey(scalar: key.scalar))
        #expect(again.x == key.x && again.y == key.y)
        #expect(ES256SigningKey(scalar: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(ES256SigningKey(scalar: [UInt8](repeating: 0xFF, count: 32)) == nil)  // above the order n
    }
}

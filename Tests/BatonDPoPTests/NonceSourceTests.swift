import BatonCore
@testable import BatonDPoP
import Testing

/// Stateless server nonces (RFC 9449 §8) and how the check uses them.
struct NonceSourceTests {
    let key = SecureRandom.bytes(32)
    let start = Instant(milliseconds: 1_790_000_020_000)  // 40 s into a 60-s slot

    @Test func nonceIsAcceptedInItsSlotAndTheNext() {
        let source = NonceSource(key: key)
        let nonce = source.nonce(at: start)
        #expect(nonce.count == 43)
        #expect(source.accepts(nonce, at: start))
        #expect(source.accepts(nonce, at: start + .seconds(19)))  // same slot
        #expect(source.accepts(nonce, at: start + .seconds(79)))  // the next slot
        #expect(!source.accepts(nonce, at: start + .seconds(80)))  // two slots on
        #expect(!source.accepts(nonce, at: start - .seconds(41)))  // the slot before it was issued
    }

    @Test func instancesSharingTheKeyAcceptEachOthersNonces() {
        let first = NonceSource(key: key), second = NonceSource(key: key)
        #expect(second.accepts(first.nonce(at: start), at: start + .seconds(30)))
        #expect(first.accepts(second.nonce(at: start), at: start))
        #expect(!NonceSource(key: SecureRandom.bytes(32)).accepts(first.nonce(at: start), at: start))
    }

    @Test(arguments: ["", "x", String(repeating: "A", count: 43), String(repeating: "A", count: 44)])
    func garbageIsNotANonce(_ nonce: String) {
        #expect(!NonceSource(key: key).accepts(nonce, at: start))
    }

    private func fixture(_ use: (NonceSource) -> ProofPolicy.NonceUse) -> (ProofFixture, NonceSource) {
        var fixture = ProofFixture()
        let source = NonceSource(key: key)
        fixture.policy.nonces = use(source)
        return (fixture, source)
    }

    @Test func requiredNonceMustBePresentAndCurrent() throws {
        let (fixture, source) = fixture { .always($0) }
        #expect(fixture.failure(fixture.proof()) == .nonceRequired)
        var claims = fixture.claims()
        claims["nonce"] = .string(NonceSource(key: SecureRandom.bytes(32)).nonce(at: ProofFixture.now))
        #expect(fixture.failure(fixture.proof(claims: claims)) == .nonceInvalid)
        // A valid nonce carries a proof whose iat is an hour off: the client's clock is wrong.
        claims = fixture.claims(iat: ProofFixture.now - .seconds(3600))
        claims["nonce"] = .string(source.nonce(at: ProofFixture.now))
        #expect(fixture.failure(fixture.proof(claims: claims)) == nil)
        #expect(ProofError.nonceRequired.answer == .useNonce && ProofError.nonceInvalid.answer == .useNonce)
    }

    @Test func wrongClockIsAskedForANonce() {
        let (fixture, source) = fixture { .whenClockIsOff($0) }
        #expect(fixture.failure(fixture.proof()) == nil)  // a right clock needs none
        var claims = fixture.claims(iat: ProofFixture.now + .seconds(600))
        #expect(fixture.failure(fixture.proof(claims: claims)) == .nonceRequired)
        claims["nonce"] = .string(source.nonce(at: ProofFixture.now))
        #expect(fixture.failure(fixture.proof(claims: claims)) == nil)
    }

    @Test func replayWindowCoversTheNoncesLifetime() {
        let (fixture, _) = fixture { .whenClockIsOff($0) }
        #expect(fixture.policy.replayWindow == .seconds(120))
        #expect(ProofPolicy().replayWindow == .seconds(70))
    }
}

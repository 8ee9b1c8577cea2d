import BatonCore
@testable import BatonDPoP
import Testing

/// Rotating the DPoP nonce key (`--dpop-nonce-key-file` changed, the old one given as
/// `--dpop-previous-nonce-key-file`): a nonce of the previous key stays valid for one nonce
/// lifetime after the rotation, and no longer; new nonces are the new key's only.
struct NonceRotationTests {
    let old = SecureRandom.bytes(32), new = SecureRandom.bytes(32)
    let rotation = Instant(milliseconds: 1_790_000_020_000)  // 40 s into a 60-s slot

    @Test func aNonceOfThePreviousKeyStaysValidForOneLifetimeAfterTheRotation() {
        let before = NonceSource(key: old)
        let issuedJustBefore = before.nonce(at: rotation - .seconds(1))
        let after = NonceSource(key: new, previousKey: old, previousAcceptedUntil: rotation + before.lifetime)
        #expect(after.accepts(issuedJustBefore, at: rotation))
        #expect(after.accepts(issuedJustBefore, at: rotation + .seconds(70)))  // its own slot's successor: still its lifetime
        // Its slot has passed: refused, as it would have been without a rotation.
        #expect(!after.accepts(issuedJustBefore, at: rotation + .seconds(80)))
        // A nonce the old key would make now (another instance not yet restarted) is accepted
        // until one lifetime after the rotation, then refused.
        #expect(after.accepts(before.nonce(at: rotation + .seconds(100)), at: rotation + .seconds(100)))
        #expect(!after.accepts(before.nonce(at: rotation + before.lifetime), at: rotation + before.lifetime))
    }

    @Test func theRotatedSourceIssuesWithTheNewKeyOnly() {
        let after = NonceSource(key: new, previousKey: old, previousAcceptedUntil: rotation + .seconds(120))
        let nonce = after.nonce(at: rotation)
        #expect(nonce == NonceSource(key: new).nonce(at: rotation))
        #expect(!NonceSource(key: old).accepts(nonce, at: rotation))
        #expect(after.accepts(nonce, at: rotation + .seconds(500)) == false)  // its own lifetime rules
        #expect(after.accepts(after.nonce(at: rotation + .seconds(500)), at: rotation + .seconds(500)))
    }

    @Test func withoutAPreviousKeyAnotherKeysNonceIsRefused() {
        let source = NonceSource(key: new)
        #expect(!source.accepts(NonceSource(key: old).nonce(at: rotation), at: rotation))
    }
}

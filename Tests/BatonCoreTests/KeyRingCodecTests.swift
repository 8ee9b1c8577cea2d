@testable import BatonCore
import Foundation
import Testing

/// The token key ring's codec and key wrapping: `bt2_` tokens name their key, `bt1_` tokens
/// (key 0, the key file's) keep verifying, a retired key's tokens are refused, and a wrapped
/// key opens only under its key file's key and for its own row.
struct KeyRingCodecTests {
    let fileKey = TokenKey.generate()
    let ringKey = TokenKey.generate()

    @Test func aBt1TokenMintedBeforeTheRingStillAuthenticatesUnderTheRing() throws {
        let old = TokenCodec(key: fileKey).issue(chainID: ChainID(rawValue: 99), generation: 4)
        let ring = TokenCodec(keys: [0: fileKey, 1: ringKey], minting: 1)
        let presented = try #require(ring.authenticate(old.text))
        #expect(presented.chainID == ChainID(rawValue: 99) && presented.generation == 4 && presented.keyID == 0)
        #expect(presented.hash == old.hash)
    }

    @Test func theRingMintsBt2TokensNamingTheNewestKey() throws {
        let ring = TokenCodec(keys: [0: fileKey, 1: ringKey], minting: 1)
        let issued = ring.issue(chainID: ChainID(rawValue: 0x1234_5678_9ABC), generation: 7)
        #expect(issued.text.hasPrefix("bt2_") && issued.text.count == TokenCodec.ringLength && issued.keyID == 1)
        #expect(TokenCodec.claimedKeyID(issued.text) == 1)
        let presented = try #require(ring.authenticate(issued.text))
        #expect(presented.chainID == issued.chainID && presented.generation == 7 && presented.keyID == 1 && presented.hash == issued.hash)
        // The file key alone does not know key 1; a ring that knows only key 0 says the token names a newer key.
        let before = TokenCodec(key: fileKey)
        #expect(before.authenticate(issued.text) == nil)
        #expect(before.namesNewerKey(issued.text))
        #expect(!ring.namesNewerKey(issued.text))
    }

    @Test func aRetiredKeysTokensAreRefused() {
        let bt1 = TokenCodec(key: fileKey).issue(chainID: ChainID(rawValue: 5), generation: 0)
        let bt2 = TokenCodec(keys: [0: fileKey, 1: ringKey], minting: 1).issue(chainID: ChainID(rawValue: 5), generation: 1)
        let key0Retired = TokenCodec(keys: [1: ringKey], minting: 1)
        #expect(key0Retired.authenticate(bt1.text) == nil)
        let key1Retired = TokenCodec(keys: [0: fileKey, 2: TokenKey.generate()], minting: 2, newestKnown: 2)
        #expect(key1Retired.authenticate(bt2.text) == nil)
        #expect(!key1Retired.namesNewerKey(bt2.text))  // known and retired: no reload for it
    }

    @Test func everySingleCharacterChangeOfABt2TokenIsRejected() {
        let ring = TokenCodec(keys: [0: fileKey, 1: ringKey, 2: TokenKey.generate()], minting: 1)
        let token = ring.issue(chainID: ChainID(rawValue: 42), generation: 3).text
        var bytes = Array(token.utf8)
        for index in bytes.indices {
            let original = bytes[index]
            bytes[index] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(ring.authenticate(String(decoding: bytes, as: UTF8.self)) == nil, "position \(index)")
            bytes[index] = original
        }
    }

    @Test func aBt2TokenClaimingKey0OrAnotherKeysIdIsRejected() throws {
        let keyA = TokenKey.generate(), keyB = TokenKey.generate()
        let ring = TokenCodec(keys: [0: fileKey, 1: keyA, 2: keyB], minting: 1)
        let token = ring.issue(chainID: ChainID(rawValue: 42), generation: 3).text
        var body = try #require(Base64URL.decode(Array(token.utf8)[4...]))
        for claimed: UInt8 in [0, 2] {
            body[3] = claimed
            #expect(ring.authenticate("bt2_" + Base64URL.encode(body)) == nil, "key \(claimed)")
        }
    }

    @Test func aWrappedKeyUnwrapsUnderItsFileKeyForItsRowOnly() throws {
        let wrapped = KeyWrap.wrap(ringKey, id: 3, under: fileKey)
        #expect(wrapped.count == KeyWrap.wrappedLength)
        #expect(try #require(KeyWrap.unwrap(wrapped, id: 3, under: fileKey)).bytes == ringKey.bytes)
        #expect(KeyWrap.unwrap(wrapped, id: 4, under: fileKey) == nil)  // copied to another row
        #expect(KeyWrap.unwrap(wrapped, id: 3, under: TokenKey.generate()) == nil)  // another key file
        for index in wrapped.indices {
            var altered = wrapped
            altered[index] ^= 1
            #expect(KeyWrap.unwrap(altered, id: 3, under: fileKey) == nil, "byte \(index)")
        }
        // The key is not in the wrapped bytes, and two wraps of one key differ (a fresh nonce).
        #expect(!wrapped.indices.dropLast(31).contains { Array(wrapped[$0..<$0 + 32]) == ringKey.bytes })
        #expect(KeyWrap.wrap(ringKey, id: 3, under: fileKey) != wrapped)
    }

    @Test func theFuzzCorpusHoldsBt2TokensOfTheFuzzRing() throws {
        let ring = TokenCodec(keys: [0: TokenKey(bytes: Array(0..<32))!, 1: TokenKey(bytes: Array(32..<64))!, 2: TokenKey(bytes: Array(64..<96))!],
                              minting: 2)
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus/token")
        let seeds = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
            .map { try String(contentsOf: corpus.appendingPathComponent($0), encoding: .utf8) }
        #expect(Set(seeds.compactMap { ring.authenticate($0)?.keyID }) == [0, 1, 2])
    }
}

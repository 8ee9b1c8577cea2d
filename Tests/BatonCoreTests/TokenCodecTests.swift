@testable import BatonCore
import Testing

struct TokenCodecTests {
    let codec = TokenCodec(key: TokenKey.generate())

    @Test func issuedTokenHasPrefixLengthAndAuthenticates() throws {
        let issued = codec.issue(chainID: ChainID(rawValue: 0x1234_5678_9ABC), generation: 7)
        #expect(issued.text.hasPrefix("bt1_"))
        #expect(issued.text.count == TokenCodec.length)
        #expect(issued.text.utf8.allSatisfy { $0 < 128 && ($0 == 95 || $0 == 45 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)) })
        let presented = try #require(codec.authenticate(issued.text))
        #expect(presented.chainID == issued.chainID)
        #expect(presented.generation == 7)
        #expect(presented.hash == issued.hash)
    }

    @Test func tokensAreUniqueAcrossIssues() {
        let texts = Set((0..<1000).map { _ in codec.issue(chainID: ChainID(rawValue: 1), generation: 0).text })
        #expect(texts.count == 1000)
    }

    @Test func everySingleCharacterChangeIsRejected() {
        let token = codec.issue(chainID: ChainID(rawValue: 42), generation: 3).text
        var bytes = Array(token.utf8)
        for index in bytes.indices {
            let original = bytes[index]
            bytes[index] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(codec.authenticate(String(decoding: bytes, as: UTF8.self)) == nil, "position \(index)")
            bytes[index] = original
        }
    }

    @Test func tokenFromAnotherKeyIsRejected() {
        let other = TokenCodec(key: TokenKey.generate())
        #expect(codec.authenticate(other.issue(chainID: ChainID(rawValue: 1), generation: 0).text) == nil)
    }

    @Test(arguments: ["", "bt1_", "Bearer", "bt2_" + String(repeating: "A", count: 80), String(repeating: "x", count: 84),
                      "bt1_" + String(repeating: "=", count: 80), "bt1_" + String(repeating: "A", count: 81)])
    func malformedTokensAreRejected(_ text: String) {
        #expect(codec.authenticate(text) == nil)
    }

    @Test func base64URLRoundTripsEveryLength() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Array(Base64URL.encode(bytes).utf8)) == bytes)
            var appended = Array("x.".utf8)
            Base64URL.append(bytes, to: &appended)
            #expect(appended == Array("x.".utf8) + Array(Base64URL.encode(bytes).utf8))
        }
        #expect(Base64URL.decode(Array("AB".utf8)) == nil)  // trailing bits not zero: non-canonical
        #expect(Base64URL.decode(Array("A".utf8)) == nil)
    }

    /// RFC 4648 §5 decoding written the plain way, character by character into bits: what the
    /// table-driven decoder must agree with on every input.
    private func referenceDecode(_ text: [UInt8]) -> [UInt8]? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var bits: [Bool] = []
        for character in text {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            bits += (0..<6).map { value >> (5 - $0) & 1 == 1 }
        }
        let whole = bits.count / 8 * 8
        // A lone character cannot encode a byte; leftover bits must be zero (one encoding each).
        guard text.count % 4 != 1, !bits[whole...].contains(true) else { return nil }
        return stride(from: 0, to: whole, by: 8).map { start in bits[start..<start + 8].reduce(0) { $0 << 1 | ($1 ? 1 : 0) } }
    }

    @Test func base64URLDecodingAgreesWithAPlainDecoderOnRandomText() {
        var generator = SystemRandomNumberGenerator()
        // The alphabet, padding, a byte past ASCII and a few neighbours of the alphabet's edges.
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8) + [0x3D, 0x2B, 0x2F, 0x40, 0x5B, 0x60, 0x7B, 0xFF, 0x00]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...24, using: &generator)
            // Mostly valid text, so that the trailing-bits and length rules are reached often.
            let text = (0..<length).map { _ in Int.random(in: 0..<20, using: &generator) == 0 ? characters.randomElement(using: &generator)! : characters[Int.random(in: 0..<64, using: &generator)] }
            #expect(Base64URL.decode(text[...]) == referenceDecode(text), "\(text)")
        }
    }

    @Test func chainIDHexRoundTrips() {
        for _ in 0..<100 {
            let id = ChainID.random()
            #expect(id.rawValue > 0)
            #expect(ChainID(hex: id.description) == id)
        }
        #expect(ChainID(hex: "zz") == nil)
        #expect(ChainID(hex: "+00000000000000f") == nil)
        // Any 16 hex digits are a well-formed id (a lookup then says whether a chain has it).
        #expect(ChainID(hex: "8000000000000000")?.description == "8000000000000000")
        #expect(ChainID(hex: "FFFFFFFFFFFFFFFF")?.description == "ffffffffffffffff")
        #expect(ChainID(hex: "00000000000000AB")?.rawValue == 0xAB)
    }
}

struct HMACTests {
    // RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
    @Test(arguments: [
        ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ])
    func matchesRFC4231(_ key: [UInt8], _ message: [UInt8], _ expected: String) {
        let mac = message.withUnsafeBytes { HMACKey(key).authenticationCode($0) }
        #expect(mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() == expected)
    }
}

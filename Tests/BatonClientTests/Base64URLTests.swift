@testable import BatonClient
import Foundation
import Testing

/// The client's base64url (RFC 4648 §5, unpadded, as JOSE writes it): every length and every
/// byte value round-trips, the encoding is Foundation's base64 with the two characters swapped
/// and the padding dropped, and anything that is not unpadded base64url is refused.
@Suite struct Base64URLTests {
    @Test func everyLengthRoundTripsAndMatchesFoundationsBase64() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...67 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(encoded == reference)
            #expect(Base64URL.decode(encoded) == bytes)
        }
        // Both swapped characters appear: 0xFB 0xFF encodes to "-_8".
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }

    @Test func whatIsNotUnpaddedBase64URLIsRefused() {
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        for text in ["+/8", "-_8=", "ab=c", "a", "ab c", "é"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        #expect(Base64URL.decode("") == [])
    }
}

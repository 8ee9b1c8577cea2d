import BatonCore
@testable import BatonDPoP
import Testing

/// RFC 7638 JWK thumbprints.
struct ThumbprintTests {
    /// RFC 7638 §3.1's own example: an RSA key with extra members, and its thumbprint.
    @Test func rfc7638ExampleThumbprint() throws {
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        let jwk = #"{"kty":"RSA","n":"\#(n)","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#
        let members = try #require(StrictJSONParser.parse(Array(jwk.utf8)).object)
        #expect(try Thumbprint(jwk: members).text == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    /// The keys' thumbprints are written without the JSON escaper (`init(p256X:y:)`); the JWK's,
    /// through it (`orderedMembers`).
    @Test func keysThumbprintIsItsJWKsThumbprint() throws {
        for _ in 0..<20 { for key in [ProofSigner(.es256(.generate())), ProofSigner(.ed25519(.generate()))] {
            let members = try #require(StrictJSONParser.parse(Array(key.publicJWK.text.utf8)).object)
            #expect(try Thumbprint(jwk: members) == key.thumbprint)
        } }
    }

    @Test func extraMembersDoNotChangeTheThumbprint() throws {
        let key = ES256SigningKey.generate()
        guard case .object(var jwk) = key.publicJWK else { return }
        jwk["kid"] = .string("device-1")
        jwk["use"] = .string("sig")
        let members = try #require(StrictJSONParser.parse(Array(JSONValue.object(jwk).text.utf8)).object)
        #expect(try Thumbprint(jwk: members) == key.thumbprint)
    }

    @Test func unknownKeyTypeHasNoThumbprint() {
        #expect(throws: ProofError.invalidKey(reason: "kty is missing or unknown")) { try Thumbprint(jwk: ["kty": .string("XYZ")]) }
    }
}

import BatonCore
import BatonDPoP
@testable import BatonIdentity
import Testing

/// JWK Sets as providers publish them, the keys Baton keeps from them, the cache lifetime a
/// provider's `Cache-Control` gives, and an issuer's stored settings.
struct KeySetTests {
    @Test func keysBatonCannotUseAreSkippedNotFatal() throws {
        let ec = ES256SigningKey.generate()
        let json = """
            {"keys":[
              {"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},
              {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
              {"kty":"EC","crv":"P-384","kid":"p384","x":"AA","y":"AA"},
              {"kty":"RSA","kid":"small","n":"\(Base64URL.encode([0xC1] + [UInt8](repeating: 7, count: 127)))","e":"AQAB"},
              \(ec.publicJWK.text.dropLast()),"kid":"ec-1"}
            ]}
            """
        let keys = try KeySet(json: Array(json.utf8))
        #expect(keys.keys.map(\.id) == ["ec-1"])
        #expect(keys.candidates(kid: "ec-1", algorithm: .es256).count == 1)
        #expect(keys.candidates(kid: "ec-1", algorithm: .rs256).isEmpty)
        #expect(keys.candidates(kid: nil, algorithm: .es256).count == 1)
    }

    @Test func aPublishedPrivateKeyIsNotUsed() {
        let json = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"\#(Base64URL.encode([UInt8](repeating: 1, count: 32)))","y":"\#(Base64URL.encode([UInt8](repeating: 2, count: 32)))","d":"AA"}]}"#
        #expect(throws: KeySetError.malformed("the JWK Set has no RSA (2048-8192 bits), P-256 or Ed25519 signing key")) {
            try KeySet(json: Array(json.utf8))
        }
    }

    @Test func malformedSetsAreNamed() {
        #expect(throws: KeySetError.malformed("the JWK Set is not valid JSON")) { try KeySet(json: Array("{".utf8)) }
        #expect(throws: KeySetError.malformed("the JWK Set has no \"keys\" array")) { try KeySet(json: Array("{}".utf8)) }
        #expect(throws: KeySetError.malformed("a member of \"keys\" is not a JSON object")) { try KeySet(json: Array(#"{"keys":[1]}"#.utf8)) }
    }

    @Test func cacheLifetimeFollowsMaxAgeWithinBounds() {
        #expect(CachePolicy.lifetime(cacheControl: nil) == .seconds(3600))
        #expect(CachePolicy.lifetime(cacheControl: "public, max-age=300") == .seconds(300))
        #expect(CachePolicy.lifetime(cacheControl: "max-age=5") == .seconds(60))
        #expect(CachePolicy.lifetime(cacheControl: "max-age=99999999999999999") == .seconds(86_400))
        #expect(CachePolicy.lifetime(cacheControl: "no-store") == .seconds(60))
        #expect(CachePolicy.lifetime(cacheControl: "max-age=abc") == .seconds(3600))
        #expect(CachePolicy.lifetime(cacheControl: "max-age=\"120\"") == .seconds(120))
    }

    @Test func settingsSurviveTheDatabase() throws {
        let issuer = IdentityIssuer(name: "keycloak", issuer: "https://kc.bank.test/realms/retail", tokenType: .jwt, audiences: ["a", "b"],
                                    algorithms: [.ps256, .edDSA], staticKeys: nil, caPEM: "-----BEGIN CERTIFICATE-----\nx\n",
                                    newUsers: .linkedOnly, maxAge: .seconds(120), skew: .seconds(5))
        try issuer.validate()
        #expect(IdentityIssuer(name: issuer.name, issuer: issuer.issuer, settingsJSON: issuer.settingsJSON) == issuer)
        #expect(issuer.discoveryURL == "https://kc.bank.test/realms/retail/.well-known/openid-configuration")
    }

    @Test func operatorMistakesAreNamed() {
        let base = IdentityIssuer(name: "bank", issuer: "https://login.bank.test", tokenType: .idToken, audiences: ["app"])
        var plain = base
        plain.issuer = "http://login.bank.test"
        #expect(throws: BatonError.invalidArgument("--issuer must be an https URL (OIDC Core §2), e.g. https://login.bank.example")) { try plain.validate() }
        var noAudience = base
        noAudience.audiences = []
        #expect(throws: BatonError.invalidArgument("--client-id (the accepted audience) is required")) { try noAudience.validate() }
        var badName = base
        badName.name = "Bank Name"
        #expect(throws: BatonError.invalidArgument("the issuer's name must be 1-32 characters of lowercase letters, digits and -")) { try badName.validate() }
        var badKeys = base
        badKeys.staticKeys = "{}"
        #expect(throws: BatonError.invalidArgument("--jwks-file: the JWK Set has no \"keys\" array")) { try badKeys.validate() }
    }

    @Test func theNonceIsTheHashOfTheThumbprint() {
        // base64url(SHA-256("abc")): the FIPS 180-2 test vector ba7816bf...
        #expect(IdentityNonce.value(forThumbprint: "abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }
}

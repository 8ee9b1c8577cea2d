import BatonCore
import BatonDPoP
@testable import BatonIdentity
import Testing

/// The checks of OIDC Core §3.1.3.7 and RFC 7523 §3, one rule per test, on tokens signed here
/// with ES256 and Ed25519 keys (RS256 and PS256 come from the test identity provider in
/// Python, IdentityProviderTests): each refusal is the rule it names, and a token that breaks
/// nothing passes.
struct SubjectTokenCheckTests {
    static let provider = ProofSigner(.es256(ES256SigningKey.generate()))
    static let device = ProofSigner(.es256(ES256SigningKey.generate()))
    static let now = Instant(milliseconds: 1_800_000_000_000)
    static let issuer = IdentityIssuer(name: "bank", issuer: "https://login.bank.test", tokenType: .idToken, audiences: ["app"])

    static var keys: KeySet {
        var jwk = provider.publicJWK
        if case .object(var members) = jwk { members["kid"] = .string("k1"); jwk = .object(members) }
        return try! KeySet(json: Array(JSONValue.object(["keys": .array([jwk])]).text.utf8))
    }

    static func claims(_ changes: [String: JSONValue?] = [:]) -> JSONValue {
        let seconds = now.milliseconds / 1000
        var members: [String: JSONValue] = [
            "iss": .string(issuer.issuer), "sub": .string("customer-1"), "aud": .string("app"),
            "iat": .int(seconds - 5), "exp": .int(seconds + 300),
            "nonce": .string(IdentityNonce.value(forThumbprint: device.thumbprint.text)),
        ]
        for (name, value) in changes { members[name] = value }
        return .object(members)
    }

    static func token(_ claims: JSONValue = claims(), header: [String: JSONValue] = [:], signer: ProofSigner = provider) -> String {
        let members: [String: JSONValue] = ["alg": .string("ES256"), "kid": .string("k1"), "typ": .string("JWT")].merging(header) { $1 }
        return signer.sign(header: .object(members), claims: claims)
    }

    static func check(_ token: String, issuer: IdentityIssuer = issuer, type: SubjectTokenType = .idToken,
                      thumbprint: String = device.thumbprint.text) throws(SubjectTokenRefusal) -> ValidatedSubject {
        try SubjectTokenCheck.validate(token, type: type, issuer: issuer, keys: keys, now: now, proofThumbprint: thumbprint)
    }

    @Test func aTokenThatBreaksNoRulePasses() throws {
        let subject = try Self.check(Self.token())
        #expect(subject.subject == "customer-1")
        #expect(subject.issuer == "https://login.bank.test")
        // Kept as used until it expires or its iat passes the maximum age (10 min), whichever is
        // first (here exp, 5 min away), plus the skew.
        #expect(subject.keepUntil == Instant(milliseconds: Self.now.milliseconds + 300_000 + 60_000))
        let longLived = try Self.check(Self.token(Self.claims(["exp": .int(Self.now.milliseconds / 1000 + 86_400)])))
        #expect(longLived.keepUntil == Instant(milliseconds: Self.now.milliseconds - 5000 + 600_000 + 60_000))
        #expect(try SubjectTokenCheck.claimedIssuer(of: Self.token()) == "https://login.bank.test")
    }

    @Test func eachBrokenRuleIsRefusedByName() {
        let seconds = Self.now.milliseconds / 1000
        let cases: [(String, String, SubjectTokenRefusal)] = [
            ("wrong iss", Self.token(Self.claims(["iss": .string("https://evil.test")])), .unknownIssuer),
            ("wrong aud", Self.token(Self.claims(["aud": .string("other-app")])), .wrongAudience("aud contains no accepted client id")),
            ("several audiences, no azp", Self.token(Self.claims(["aud": .array([.string("app"), .string("other")])])),
             .wrongAudience("several audiences and no azp")),
            ("azp not accepted", Self.token(Self.claims(["aud": .array([.string("app"), .string("other")]), "azp": .string("other")])),
             .wrongAudience("azp is not an accepted client id")),
            ("expired", Self.token(Self.claims(["exp": .int(seconds - 61)])), .expired),
            ("not yet valid", Self.token(Self.claims(["nbf": .int(seconds + 120)])), .notYetValid),
            ("too old", Self.token(Self.claims(["iat": .int(seconds - 661)])), .tooOld),
            ("iat in the future", Self.token(Self.claims(["iat": .int(seconds + 120)])), .issuedInFuture),
            ("no sub", Self.token(Self.claims(["sub": nil])), .badSubject),
            ("wrong nonce", Self.token(Self.claims(["nonce": .string(IdentityNonce.value(forThumbprint: "another-key"))])), .nonceMismatch),
            ("no nonce", Self.token(Self.claims(["nonce": nil])), .nonceMismatch),
            ("unknown kid", Self.token(header: ["kid": .string("k2")]), .unknownKey),
            ("alg none", Self.unsigned(alg: "none"), .algorithmNotAllowed("none")),
            ("HS256", Self.unsigned(alg: "HS256"), .algorithmNotAllowed("HS256")),
            ("alg not allowed for the issuer", Self.token(header: ["alg": .string("EdDSA")]), .algorithmNotAllowed("EdDSA")),
            ("crit header", Self.token(header: ["crit": .array([.string("exp")])]), .criticalHeader),
            ("signed by another key", Self.token(signer: ProofSigner(.es256(ES256SigningKey.generate()))), .badSignature),
            ("not a JWS", "not.a.token", .malformed("not a JWS in compact form with JSON header and claims")),
            ("exp not a number", Self.token(Self.claims(["exp": .string("tomorrow")])), .malformed("exp is not a NumericDate")),
        ]
        for (name, token, expected) in cases {
            #expect(throws: expected, "\(name)") { try Self.check(token) }
        }
    }

    /// An ES256 header and the token's claims with `alg` replaced and a garbage signature: an
    /// unsigned (`none`) or HMAC token must never reach a key.
    static func unsigned(alg: String) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"\#(alg)","kid":"k1"}"#.utf8))
        let claims = Base64URL.encode(Array(Self.claims().text.utf8))
        return header + "." + claims + (alg == "none" ? "." : ".c2lnbmF0dXJl")
    }

    /// An ES256 signature (r, s) has a twin (r, n - s) that verifies too: the token is marked
    /// used by what was signed, so the twin's different text is the same token (review, L1).
    @Test func aTokensMalleableTwinIsTheSameTokenForReplay() throws {
        let token = Self.token()
        let parts = token.split(separator: ".")
        let signature = try #require(Base64URL.decode(Array(parts[2].utf8)[...]))
        // n, the order of P-256 (SEC 2 §2.4.2), minus s, big-endian.
        let n: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                          0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        var twinS = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(n[index]) - Int(signature[32 + index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            twinS[index] = UInt8(difference)
        }
        let twin = parts[0] + "." + parts[1] + "." + Base64URL.encode(Array(signature[0..<32]) + twinS)
        #expect(twin != token)
        let original = try Self.check(token), copy = try Self.check(twin)  // both verify
        #expect(copy.replayDigests == original.replayDigests)
    }

    @Test func anAccessTokenIsNotAnIdentityAssertion() {
        #expect(throws: SubjectTokenRefusal.accessTokenType) { try Self.check(Self.token(header: ["typ": .string("at+jwt")])) }
        #expect(throws: SubjectTokenRefusal.accessTokenType) { try Self.check(Self.token(header: ["typ": .string("application/AT+JWT")])) }
    }

    /// Swift's `==` takes U+212A KELVIN SIGN for K: audiences are compared as bytes.
    @Test func audiencesAreComparedAsBytes() throws {
        var issuer = Self.issuer
        issuer.audiences = ["Kapp"]
        #expect(throws: SubjectTokenRefusal.wrongAudience("aud contains no accepted client id")) {
            try Self.check(Self.token(Self.claims(["aud": .string("\u{212A}app")])), issuer: issuer)
        }
        #expect(try Self.check(Self.token(Self.claims(["aud": .string("Kapp")])), issuer: issuer).subject == "customer-1")
    }

    @Test func authTimeIsTheProvidersOrNone() throws {
        #expect(try Self.check(Self.token()).authTime == nil)
        let stated = Self.now.milliseconds / 1000 - 3600
        #expect(try Self.check(Self.token(Self.claims(["auth_time": .int(stated)]))).authTime == Instant(milliseconds: stated * 1000))
    }

    @Test func aSetWithOneKeyNeedsNoKid() throws {
        let token = Self.provider.sign(header: .object(["alg": .string("ES256")]), claims: Self.claims())
        #expect(try Self.check(token).subject == "customer-1")
    }

    @Test func theIssuersTokenTypeMustBeTheOneGiven() {
        #expect(throws: SubjectTokenRefusal.wrongTokenType) { try Self.check(Self.token(), type: .jwt) }
    }

    @Test func anAssertionIsBoundByCnfJktAndNeedsAJTI() throws {
        var assertionIssuer = Self.issuer
        assertionIssuer.tokenType = .jwt
        let jkt = Self.device.thumbprint.text
        let good = Self.token(Self.claims(["nonce": nil, "jti": .string("a-1"), "cnf": .object(["jkt": .string(jkt)])]))
        let subject = try Self.check(good, issuer: assertionIssuer, type: .jwt)
        #expect(subject.replayDigests.count == 2)  // the token, and the issuer's jti
        #expect(throws: SubjectTokenRefusal.keyMismatch) {
            try Self.check(Self.token(Self.claims(["jti": .string("a-2"), "cnf": .object(["jkt": .string("other")])])), issuer: assertionIssuer, type: .jwt)
        }
        #expect(throws: SubjectTokenRefusal.keyMismatch) {
            try Self.check(Self.token(Self.claims(["jti": .string("a-3")])), issuer: assertionIssuer, type: .jwt)
        }
        #expect(throws: SubjectTokenRefusal.missingJTI) {
            try Self.check(Self.token(Self.claims(["cnf": .object(["jkt": .string(jkt)])])), issuer: assertionIssuer, type: .jwt)
        }
        // Two tokens with one jti share the jti's digest: the store refuses the second.
        let again = try Self.check(Self.token(Self.claims(["iat": .int(Self.now.milliseconds / 1000 - 6), "jti": .string("a-1"),
                                                            "cnf": .object(["jkt": .string(jkt)])])), issuer: assertionIssuer, type: .jwt)
        #expect(again.replayDigests[1] == subject.replayDigests[1])
        #expect(again.replayDigests[0] != subject.replayDigests[0])
    }

    @Test func edDSATokensVerifyWhenAllowed() throws {
        let signer = ProofSigner(.ed25519(Ed25519SigningKey.generate(), algorithm: .edDSA))
        var jwk = signer.publicJWK
        if case .object(var members) = jwk { members["kid"] = .string("ed"); jwk = .object(members) }
        let keys = try KeySet(json: Array(JSONValue.object(["keys": .array([jwk])]).text.utf8))
        var issuer = Self.issuer
        issuer.algorithms = [.edDSA]
        let token = signer.sign(header: .object(["alg": .string("EdDSA"), "kid": .string("ed")]), claims: Self.claims())
        let subject = try SubjectTokenCheck.validate(token, type: .idToken, issuer: issuer, keys: keys, now: Self.now,
                                                     proofThumbprint: Self.device.thumbprint.text)
        #expect(subject.subject == "customer-1")
    }
}

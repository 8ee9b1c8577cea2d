import BatonCore
@testable import BatonDPoP
import Foundation
import Testing

/// RFC 9449 §4.3, one check at a time: each proof here is valid but for one thing, and the
/// error names that thing (issue 19's acceptance list first).
struct ProofCheckTests {
    let fixture = ProofFixture()

    @Test func validProofGivesTheKeysThumbprint() throws {
        let proof = try fixture.verify(fixture.proof())
        #expect(proof.thumbprint == fixture.signer.thumbprint)
        #expect(proof.issuedAt == Instant(milliseconds: ProofFixture.now.epochSeconds * 1000))
    }

    @Test func signersOwnProofIsAccepted() throws {
        let proof = fixture.signer.proof(method: "POST", url: ProofFixture.url + "?q=1", token: ProofFixture.token, now: ProofFixture.now)
        #expect(try fixture.verify(proof).thumbprint == fixture.signer.thumbprint)
    }

    @Test func wrongMethodIsRefused() {
        #expect(fixture.failure(fixture.proof(), method: "GET") == .methodMismatch(expected: "GET", found: "POST"))
    }

    @Test func methodIsCaseSensitive() {
        var claims = fixture.claims()
        claims["htm"] = .string("post")
        #expect(fixture.failure(fixture.proof(claims: claims)) == .methodMismatch(expected: "POST", found: "post"))
    }

    @Test(arguments: ["https://baton.example/v1/verify", "http://baton.example/v1/exchange",
                      "https://other.example/v1/exchange", "https://baton.example:8443/v1/exchange"])
    func wrongURLIsRefused(_ requestURL: String) {
        let error = fixture.failure(fixture.proof(), url: requestURL)
        #expect(error == .urlMismatch(expected: TargetURI(requestURL)!.text, found: "https://baton.example/v1/exchange"))
    }

    @Test(arguments: ["https://BATON.example:443/v1/./exchange", "HTTPS://baton.example/v1/%65xchange",
                      "https://baton.example/v1/x/../exchange?after=1#frag"])
    func equivalentURLIsAccepted(_ htu: String) throws {
        var claims = fixture.claims()
        claims["htu"] = .string(htu)
        #expect(try fixture.verify(fixture.proof(claims: claims)).thumbprint == fixture.signer.thumbprint)
    }

    @Test func staleProofIsRefused() {
        let proof = fixture.proof(claims: fixture.claims(iat: ProofFixture.now - .seconds(61)))
        #expect(fixture.failure(proof) == .issuedTooLongAgo(seconds: 61))
        // At the window's edge it is still fresh.
        #expect(fixture.failure(fixture.proof(claims: fixture.claims(iat: ProofFixture.now - .seconds(60)))) == nil)
    }

    @Test func futureProofIsRefused() {
        let proof = fixture.proof(claims: fixture.claims(iat: ProofFixture.now + .seconds(11)))
        #expect(fixture.failure(proof) == .issuedInFuture(seconds: 11))
        #expect(fixture.failure(fixture.proof(claims: fixture.claims(iat: ProofFixture.now + .seconds(10)))) == nil)
    }

    @Test func replayedProofIsRefused() throws {
        let checker = ProofChecker(policy: fixture.policy)
        let proof = fixture.proof()
        let hash = TokenHash(of: ProofFixture.token)
        _ = try checker.check(proof, method: "POST", url: ProofFixture.url, tokenHash: hash, now: ProofFixture.now)
        #expect(throws: ProofError.replayed) {
            try checker.check(proof, method: "POST", url: ProofFixture.url, tokenHash: hash, now: ProofFixture.now + .seconds(30))
        }
        // A new proof by the same key for the same request is not a replay.
        _ = try checker.check(fixture.proof(), method: "POST", url: ProofFixture.url, tokenHash: hash, now: ProofFixture.now)
    }

    @Test func refusedProofTakesNoPlaceInTheReplayCache() {
        let checker = ProofChecker(policy: fixture.policy)
        #expect(throws: ProofError.methodMismatch(expected: "GET", found: "POST")) {
            try checker.check(fixture.proof(), method: "GET", url: ProofFixture.url, tokenHash: TokenHash(of: ProofFixture.token), now: ProofFixture.now)
        }
        #expect(checker.replayCache.count == 0)
    }

    @Test func wrongTokenHashIsRefused() {
        #expect(fixture.failure(fixture.proof(), token: "bt1_" + String(repeating: "B", count: 80)) == .tokenHashMismatch)
        var claims = fixture.claims()
        claims["ath"] = .string("not base64url!")
        #expect(fixture.failure(fixture.proof(claims: claims)) == .tokenHashMismatch)
    }

    @Test func missingTokenHashIsRefusedWhenATokenIsPresented() {
        let proof = fixture.proof(claims: fixture.claims(token: nil))
        #expect(fixture.failure(proof) == .tokenHashMissing)
        #expect(fixture.failure(proof, token: nil) == nil)  // a login presents no token
    }

    @Test func algorithmNoneIsRefused() {
        var header = fixture.header
        header["alg"] = .string("none")
        let unsigned = fixture.proof(header: header).split(separator: ".").prefix(2).joined(separator: ".") + "."
        #expect(fixture.failure(unsigned) == .algorithmNotAllowed("none"))
    }

    @Test(arguments: ["HS256", "HS512", "RS256", "PS256", "ES384", "ES256K", "Ed448", "es256"])
    func algorithmOffTheAllowlistIsRefused(_ algorithm: String) {
        var header = fixture.header
        header["alg"] = .string(algorithm)
        #expect(fixture.failure(fixture.proof(header: header)) == .algorithmNotAllowed(algorithm))
    }

    @Test func hmacProofWithTheKeyInTheHeaderIsRefused() {
        // The classic confusion: HS256 keyed with the "public key" the header itself carries.
        let secret = Array("a shared secret anyone can read!".utf8)
        let header: JSONValue = .object(["typ": .string("dpop+jwt"), "alg": .string("HS256"),
                                         "jwk": .object(["kty": .string("oct"), "k": .string(Base64URL.encode(secret))])])
        let input = Base64URL.encode(Array(header.text.utf8)) + "." + Base64URL.encode(Array(JSONValue.object(fixture.claims()).text.utf8))
        let mac = Array(input.utf8).withUnsafeBytes { HMACKey(secret).authenticationCode($0) }
        #expect(fixture.failure(input + "." + Base64URL.encode(mac)) == .algorithmNotAllowed("HS256"))
    }

    @Test func keyThatDidNotSignIsRefused() {
        let other = ProofSigner(.es256(.generate()))
        var header = fixture.header
        header["jwk"] = other.publicJWK
        #expect(fixture.failure(fixture.proof(header: header)) == .badSignature)
    }

    @Test func alteredClaimsAreRefused() {
        let parts = fixture.proof().split(separator: ".").map(String.init)
        var claims = fixture.claims()
        claims["htu"] = .string("https://baton.example/v1/logout")
        let forged = parts[0] + "." + Base64URL.encode(Array(JSONValue.object(claims).text.utf8)) + "." + parts[2]
        #expect(fixture.failure(forged) == .badSignature)
    }

    @Test(arguments: ProofKey.privateMembers)
    func privateKeyInJWKIsRefused(_ member: String) {
        var header = fixture.header
        guard case .object(var jwk) = fixture.signer.publicJWK else { Issue.record("jwk"); return }
        jwk[member] = .string(Base64URL.encode(SecureRandom.bytes(32)))
        header["jwk"] = .object(jwk)
        #expect(fixture.failure(fixture.proof(header: header)) == .privateKeyInJWK(member: member))
    }

    @Test func realPrivateKeyInJWKIsRefusedThoughTheSignatureVerifies() throws {
        guard case .es256(let key) = fixture.signer.key, case .object(var jwk) = key.publicJWK else { Issue.record("key"); return }
        jwk["d"] = .string(Base64URL.encode(key.scalar))
        var header = fixture.header
        header["jwk"] = .object(jwk)
        #expect(fixture.failure(fixture.proof(header: header)) == .privateKeyInJWK(member: "d"))
    }

    @Test func missingTypeIsRefused() {
        var header = fixture.header
        header["typ"] = nil
        #expect(fixture.failure(fixture.proof(header: header)) == .wrongType(nil))
    }

    @Test(arguments: ["JWT", "at+jwt", "dpop", ""])
    func wrongTypeIsRefused(_ type: String) {
        var header = fixture.header
        header["typ"] = .string(type)
        #expect(fixture.failure(fixture.proof(header: header)) == .wrongType(type))
    }

    @Test(arguments: ["DPoP+JWT", "application/dpop+jwt"])
    func typeIsAMediaType(_ type: String) throws {
        var header = fixture.header
        header["typ"] = .string(type)
        _ = try fixture.verify(fixture.proof(header: header))
    }

    @Test func criticalHeaderIsRefused() {
        var header = fixture.header
        header["crit"] = .array([.string("exp")])
        #expect(fixture.failure(fixture.proof(header: header)) == .criticalHeader)
    }

    @Test func missingKeyIsRefused() {
        var header = fixture.header
        header["jwk"] = nil
        #expect(fixture.failure(fixture.proof(header: header)) == .keyMissing)
        header["jwk"] = .string("not an object")
        #expect(fixture.failure(fixture.proof(header: header)) == .keyMissing)
    }

    @Test(arguments: ["jti", "htm", "htu", "iat"])
    func missingClaimIsRefused(_ name: String) {
        var claims = fixture.claims()
        claims[name] = nil
        #expect(fixture.failure(fixture.proof(claims: claims)) == .claimMissing(name))
    }

    @Test(arguments: [("jti", JSONValue.int(7)), ("jti", .string("")), ("htm", .bool(true)), ("iat", .string("1790000000")),
                      ("iat", .bool(true)), ("htu", .string("ftp://baton.example/v1/exchange")), ("nonce", .int(1))])
    func claimOfTheWrongKindIsRefused(_ name: String, _ value: JSONValue) {
        var claims = fixture.claims()
        claims[name] = value
        #expect(fixture.failure(fixture.proof(claims: claims)) == .claimInvalid(name))
    }

    @Test func fractionalIssuedAtIsANumericDate() throws {
        let header = Base64URL.encode(Array(JSONValue.object(fixture.header).text.utf8))
        var claims = JSONValue.object(fixture.claims()).text
        claims = claims.replacingOccurrences(of: "\"iat\":\(ProofFixture.now.epochSeconds)", with: "\"iat\":\(ProofFixture.now.epochSeconds).75")
        let proof = fixture.signer.sign(encodedHeader: header, encodedClaims: Base64URL.encode(Array(claims.utf8)))
        #expect(try fixture.verify(proof).issuedAt == ProofFixture.now + .milliseconds(750))
    }
}

import BatonCore
import BatonDPoP

/// A subject token whose signature and claims passed: who it names, and what keeps it from
/// being exchanged twice.
package struct ValidatedSubject: Equatable, Sendable {
    /// The issuer's configured name and exact `iss`.
    package let issuerName: String
    package let issuer: String
    /// `sub`: with `iss`, the identity an account is linked to (never `email`).
    package let subject: String
    /// `auth_time` (OIDC Core §2): when the user last authenticated at the provider; nil when
    /// the token does not say (a token re-issued silently, by a refresh or `prompt=none`, has
    /// a fresh `iat` and no fresh authentication behind it, so `iat` does not stand in).
    package let authTime: Instant?
    /// The digests that mark this token used (the token's SHA-256, and for an assertion its
    /// issuer and `jti`'s), kept until `keepUntil`: after that, `iat` alone refuses it.
    package let replayDigests: [[UInt8]]
    package let keepUntil: Instant
}

/// The checks of a subject token (OIDC Core §3.1.3.7 for ID tokens, RFC 7523 §3 for
/// assertions), pure: text, configuration, keys, time and the proof's key in; a
/// `ValidatedSubject` or the first failed rule out. Nothing is read from a claim before the
/// signature has verified, except `iss`, which only chooses the configuration to check with.
package enum SubjectTokenCheck {
    /// The longest subject token accepted, in bytes (an ID token is usually 1-2 KB): 12 KiB, so
    /// that one this long still fits the server's 16 KiB request body with the other fields (a
    /// JWS needs no percent-encoding in a form).
    package static let maximumLength = 12 * 1024

    /// The token's unverified `iss`, to look up its issuer's configuration.
    /// - Throws: `.malformed` for a token that is not a compact JWS with a string `iss`.
    package static func claimedIssuer(of token: String) throws(SubjectTokenRefusal) -> String {
        try SubjectToken(token).claimedIssuer()
    }

    /// The checks that need no cryptography: the token's form, its issuer's kind, an allowed
    /// `alg`, no `crit`, and a key of `keys` that could have signed it. `/v1/token-exchange`
    /// runs them before it verifies the request's DPoP proof, so a forged token (a made-up
    /// `kid`, `none`, an HMAC) costs no signature verification at all (docs/benchmarks.md,
    /// the forged-ID-token flood). `validate` repeats them.
    package static func precheck(_ token: SubjectToken, type: SubjectTokenType, issuer: IdentityIssuer, keys: KeySet) throws(SubjectTokenRefusal) {
        _ = try header(token.jws, type: type, issuer: issuer, keys: keys)
    }

    /// Validates `token`, a `type` token from `issuer` signed by a key of `keys`, at `now`,
    /// presented with a DPoP proof of the key whose thumbprint is `proofThumbprint`.
    package static func validate(
        _ token: String, type: SubjectTokenType, issuer: IdentityIssuer, keys: KeySet, now: Instant, proofThumbprint: String
    ) throws(SubjectTokenRefusal) -> ValidatedSubject {
        try validate(try SubjectToken(token), type: type, issuer: issuer, keys: keys, now: now, proofThumbprint: proofThumbprint)
    }

    /// `validate` of a token parsed once (`/v1/token-exchange` reads its issuer and `kid` first).
    package static func validate(
        _ parsed: SubjectToken, type: SubjectTokenType, issuer: IdentityIssuer, keys: KeySet, now: Instant, proofThumbprint: String
    ) throws(SubjectTokenRefusal) -> ValidatedSubject {
        let jws = parsed.jws
        let (algorithm, candidates) = try header(jws, type: type, issuer: issuer, keys: keys)
        guard candidates.contains(where: { $0.verifies(jws.signature, of: jws.signingInput, with: algorithm) }) else {
            throw .badSignature
        }
        // The claims, now that they are the provider's.
        let claims = jws.payload
        guard let iss = claims["iss"]?.string, iss.utf8.elementsEqual(issuer.issuer.utf8) else { throw .unknownIssuer }
        guard let subject = claims["sub"]?.string, !subject.isEmpty, subject.utf8.count <= 255,
              !subject.unicodeScalars.contains(where: \.isControlOrFormat) else { throw .badSubject }
        try checkAudience(claims, accepted: issuer.audiences)
        let skew = issuer.skew.wholeMilliseconds
        let nowMS = now.milliseconds
        let exp = try time(claims, "exp", required: true)!
        guard nowMS < exp + skew else { throw .expired }
        if let nbf = try time(claims, "nbf", required: false) { guard nbf <= nowMS + skew else { throw .notYetValid } }
        let iat = try time(claims, "iat", required: true)!
        guard iat <= nowMS + skew else { throw .issuedInFuture }
        guard nowMS - iat <= issuer.maxAge.wholeMilliseconds + skew else { throw .tooOld }
        var authTime: Int64?
        if let stated = try time(claims, "auth_time", required: false) {
            guard stated <= nowMS + skew else { throw .issuedInFuture }
            authTime = stated
        }
        // The signed part, not the whole text: an ECDSA signature has a second valid form
        // (s and n - s), so the same token could be presented twice under two texts.
        var digests = [Digest.sha256(Array("subject-token\u{0}".utf8) + jws.signingInput)]
        switch type {
        case .idToken:
            guard let nonce = claims["nonce"]?.string,
                  Digest.constantTimeEquals(Array(nonce.utf8), Array(IdentityNonce.value(forThumbprint: proofThumbprint).utf8)) else {
                throw .nonceMismatch
            }
        case .jwt:
            guard let confirmation = claims["cnf"]?.object, let jkt = confirmation["jkt"]?.string,
                  Digest.constantTimeEquals(Array(jkt.utf8), Array(proofThumbprint.utf8)) else { throw .keyMismatch }
            guard let jti = claims["jti"]?.string, !jti.isEmpty else { throw .missingJTI }
            digests.append(Digest.sha256(Array(("assertion-jti\u{0}" + issuer.issuer + "\u{0}" + jti).utf8)))
        }
        // Once `iat` is older than the maximum age, the token is refused as too old: keeping it
        // as used longer than that (or until a far `exp`) would only grow the table.
        let keepUntil = Instant(milliseconds: min(exp, iat + issuer.maxAge.wholeMilliseconds) + skew)
        return ValidatedSubject(issuerName: issuer.name, issuer: issuer.issuer, subject: subject,
                                authTime: authTime.map { Instant(milliseconds: min($0, nowMS)) }, replayDigests: digests, keepUntil: keepUntil)
    }

    /// The header's rules: the issuer's kind, an allowed asymmetric algorithm, no extension,
    /// and the keys that may have signed (at least one).
    private static func header(
        _ jws: CompactJWS, type: SubjectTokenType, issuer: IdentityIssuer, keys: KeySet
    ) throws(SubjectTokenRefusal) -> (IdentityAlgorithm, [IdentityKey]) {
        guard issuer.tokenType == type else { throw .wrongTokenType }
        let algText = jws.header["alg"]?.string ?? ""
        guard let algorithm = IdentityAlgorithm(rawValue: algText), issuer.algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed(String(algText.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }.prefix(16)))
        }
        guard jws.header["crit"] == nil else { throw .criticalHeader }
        // RFC 8725 §3.11: an access token (RFC 9068's `at+jwt`) is not an identity assertion,
        // even with Baton as its audience and a `cnf.jkt`.
        if let typ = jws.header["typ"]?.string?.lowercased(), typ == "at+jwt" || typ == "application/at+jwt" { throw .accessTokenType }
        var kid: String?
        if let node = jws.header["kid"] {
            guard let text = node.string else { throw .malformed("kid is not a string") }
            kid = text
        }
        let candidates = keys.candidates(kid: kid, algorithm: algorithm)
        guard !candidates.isEmpty else { throw .unknownKey }
        return (algorithm, candidates)
    }

    /// OIDC Core §3.1.3.7 items 3-5: `aud` (a string or an array of strings) contains an
    /// accepted audience; with several audiences `azp` is required; an `azp` must be accepted.
    private static func checkAudience(_ claims: [String: JSONNode], accepted: [String]) throws(SubjectTokenRefusal) {
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let many)?:
            audiences = many.compactMap(\.string)
            guard audiences.count == many.count else { throw .malformed("aud holds a value that is not a string") }
        default: throw .wrongAudience("no aud claim")
        }
        // Compared as bytes: Swift's `==` takes canonically equivalent strings as equal (U+212A KELVIN SIGN and K).
        func isAccepted(_ value: String) -> Bool { accepted.contains { $0.utf8.elementsEqual(value.utf8) } }
        guard audiences.contains(where: isAccepted) else { throw .wrongAudience("aud contains no accepted client id") }
        if let azp = claims["azp"] {
            guard let text = azp.string, isAccepted(text) else { throw .wrongAudience("azp is not an accepted client id") }
        } else if audiences.count > 1 {
            throw .wrongAudience("several audiences and no azp")
        }
    }

    /// A NumericDate claim (RFC 7519 §2: seconds since the epoch, possibly fractional), in milliseconds.
    private static func time(_ claims: [String: JSONNode], _ name: String, required: Bool) throws(SubjectTokenRefusal) -> Int64? {
        guard let node = claims[name] else {
            if required { throw .malformed("no \(name) claim") }
            return nil
        }
        guard let seconds = node.number, seconds.isFinite, seconds >= 0, seconds < 1e11 else {
            throw .malformed("\(name) is not a NumericDate")
        }
        return Int64(seconds * 1000)
    }
}

/// A subject token parsed once: its compact JWS (header and claims as JSON, nothing trusted
/// until `SubjectTokenCheck.validate` verified the signature) and its text.
package struct SubjectToken: Sendable {
    package let text: String
    let jws: CompactJWS

    /// Parses `text`.
    /// - Throws: `.malformed` for a token over `SubjectTokenCheck.maximumLength` bytes, or not a
    ///   compact JWS with JSON header and claims.
    package init(_ text: String) throws(SubjectTokenRefusal) {
        guard text.utf8.count <= SubjectTokenCheck.maximumLength else { throw .malformed("longer than \(SubjectTokenCheck.maximumLength) bytes") }
        do { jws = try CompactJWS(text) } catch { throw .malformed("not a JWS in compact form with JSON header and claims") }
        self.text = text
    }

    /// The unverified `iss`, which only picks the configuration the token is checked against.
    /// - Throws: `.malformed` without a string `iss`.
    package func claimedIssuer() throws(SubjectTokenRefusal) -> String {
        guard let issuer = jws.payload["iss"]?.string, !issuer.isEmpty else { throw .malformed("no iss claim") }
        return issuer
    }

    /// The header's `kid` when it is a string (whether a key set must be fetched).
    package var keyID: String? { jws.header["kid"]?.string }
}

import BatonCore

/// A DPoP proof (RFC 9449 §4) that passed every check of §4.3 but the replay check, which
/// needs memory (`ProofChecker` adds it).
package struct DPoPProof: Equatable, Sendable {
    /// The RFC 7638 thumbprint of the proof's key: what a bound chain stores (`jkt`).
    package let thumbprint: Thumbprint
    /// The proof's unique identifier.
    package let jti: String
    /// The proof's `iat`.
    package let issuedAt: Instant
    /// Whether a server nonce established the proof's freshness.
    package let hasNonce: Bool

    /// Checks `header`, the value of a request's one `DPoP` header, for a request with
    /// `method` to `url` (the public URL the client addressed: scheme, host, port, path; a
    /// query is ignored), presenting the token whose hash is `tokenHash` (nil when the
    /// request presents none: a login), at `now`. Pure: no clock, no I/O, no memory.
    ///
    /// The checks run in RFC 9449 §4.3's order, the cheap ones before the signature: form,
    /// `typ`, `alg`, `crit`, `jwk` (a private member first), signature, claims, `htm`,
    /// `htu`, `ath`, then freshness by nonce or `iat`.
    /// - Throws: the `ProofError` naming the first check that failed.
    package static func verify(_ header: String, method: String, url: String, tokenHash: TokenHash?,
                               now: Instant, policy: ProofPolicy) throws(ProofError) -> DPoPProof {
        try check(header, method: method, url: url, tokenHash: tokenHash, now: now, policy: policy, deferringSignature: false).proof
    }

    /// `verify`'s checks but the signature, which the returned `PendingSignature` makes when
    /// the caller has seen that the proof's key is worth it (the server's verify: the key is
    /// the presented chain's, and the chain is within its budget of refused proofs). The other
    /// checks run in `verify`'s order, so a proof that fails one of them and has a bad
    /// signature too is refused for the other failure.
    package static func verifyDeferringSignature(_ header: String, method: String, url: String, tokenHash: TokenHash?,
                                                 now: Instant, policy: ProofPolicy) throws(ProofError) -> (DPoPProof, PendingSignature) {
        let checked = try check(header, method: method, url: url, tokenHash: tokenHash, now: now, policy: policy, deferringSignature: true)
        return (checked.proof, checked.signature)
    }

    /// The one signature check a proof still needs: its key, its signature, what was signed.
    package struct PendingSignature: Sendable {
        let key: ProofKey
        let signature: [UInt8]
        let signingInput: [UInt8]

        /// Checks the signature.
        /// - Throws: `.badSignature`; `.invalidKey` for a P-256 point not on the curve.
        package func verify() throws(ProofError) {
            guard try key.verifies(signature, of: signingInput) else { throw .badSignature }
        }
    }

    private static func check(_ header: String, method: String, url: String, tokenHash: TokenHash?, now: Instant,
                              policy: ProofPolicy, deferringSignature: Bool) throws(ProofError) -> (proof: DPoPProof, signature: PendingSignature) {
        guard header.utf8.count <= policy.maximumLength else { throw .tooLong(limit: policy.maximumLength) }
        let jws = try CompactJWS(header)

        // typ: "dpop+jwt"; a media type, case-insensitive, with "application/" implied
        // when it has no "/" (RFC 7515 §4.1.9).
        guard let type = jws.header["typ"] else { throw .wrongType(nil) }
        guard let typeText = type.string, ["dpop+jwt", "application/dpop+jwt"].contains(typeText.lowercased()) else {
            throw .wrongType(type.string ?? "(not a string)")
        }
        guard let name = jws.header["alg"]?.string else { throw .algorithmNotAllowed(nil) }
        guard let algorithm = ProofAlgorithm(rawValue: name), policy.algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed(name)
        }
        guard jws.header["crit"] == nil else { throw .criticalHeader }
        guard let jwk = jws.header["jwk"]?.object else { throw .keyMissing }
        let key = try ProofKey(jwk: jwk, algorithm: algorithm)
        let signature = PendingSignature(key: key, signature: jws.signature, signingInput: jws.signingInput)
        if !deferringSignature { try signature.verify() }

        let claims = try Claims(jws.payload)
        guard claims.method == method else { throw .methodMismatch(expected: method, found: claims.method) }
        // The usual case is a client that wrote the URL exactly as the server sees it: equal
        // strings are equal after any normalization, so both normalizations are skipped.
        if claims.url != url {
            guard let expected = TargetURI(url) else { throw .urlMismatch(expected: url, found: claims.url) }
            guard let found = TargetURI(claims.url) else { throw .claimInvalid("htu") }
            guard found == expected else { throw .urlMismatch(expected: expected.text, found: found.text) }
        }
        if let tokenHash {
            guard let ath = claims.tokenHash else { throw .tokenHashMissing }
            guard let presented = Base64URL.decode(Array(ath.utf8)[...]), tokenHash.matches(presented) else { throw .tokenHashMismatch }
        }
        try checkFreshness(claims, now: now, policy: policy)
        return (DPoPProof(thumbprint: key.thumbprint, jti: claims.jti, issuedAt: claims.issuedAt, hasNonce: claims.nonce != nil), signature)
    }

    /// §4.3 checks 10 and 11: the nonce when the server asks for one, else `iat` in the window.
    private static func checkFreshness(_ claims: Claims, now: Instant, policy: ProofPolicy) throws(ProofError) {
        let nonces = policy.nonces
        if let source = nonces.source {
            if let nonce = claims.nonce {
                guard source.accepts(nonce, at: now) else { throw .nonceInvalid }
                return  // a valid nonce proves freshness, whatever the client's clock
            }
            if case .always = nonces { throw .nonceRequired }
        }
        let age = now - claims.issuedAt
        if age > policy.maximumAge {
            if nonces.source != nil { throw .nonceRequired }
            throw .issuedTooLongAgo(seconds: age.wholeMilliseconds / 1000)
        }
        if age < .zero - policy.maximumClockAhead {
            if nonces.source != nil { throw .nonceRequired }
            throw .issuedInFuture(seconds: -age.wholeMilliseconds / 1000)
        }
    }

    /// The payload's claims (RFC 9449 §4.2), typed.
    private struct Claims {
        let jti: String
        let method: String
        let url: String
        let issuedAt: Instant
        let tokenHash: String?
        let nonce: String?

        init(_ payload: [String: JSONNode]) throws(ProofError) {
            jti = try Self.string(payload, "jti")
            method = try Self.string(payload, "htm")
            url = try Self.string(payload, "htu")
            guard let iat = payload["iat"] else { throw .claimMissing("iat") }
            // A NumericDate (RFC 7519 §2): seconds, possibly fractional; a boolean or a
            // string is not one, nor is a date beyond ±10^11 s (year 5138).
            guard let seconds = iat.number, abs(seconds) < 1e11 else { throw .claimInvalid("iat") }
            issuedAt = Instant(milliseconds: Int64((seconds * 1000).rounded(.down)))
            tokenHash = try Self.optionalString(payload, "ath")
            nonce = try Self.optionalString(payload, "nonce")
        }

        private static func string(_ payload: [String: JSONNode], _ name: String) throws(ProofError) -> String {
            guard let value = try optionalString(payload, name) else { throw .claimMissing(name) }
            return value
        }

        private static func optionalString(_ payload: [String: JSONNode], _ name: String) throws(ProofError) -> String? {
            guard let node = payload[name] else { return nil }
            guard let value = node.string, !value.isEmpty else { throw .claimInvalid(name) }
            return value
        }
    }
}

import BatonCore

/// Makes DPoP proofs (RFC 9449 §4.2) with a software key: what a client sends in its
/// `DPoP` header, and what the tests send to the checker.
package struct ProofSigner: Sendable {
    /// A key that signs proofs.
    package enum Key: Sendable {
        case es256(ES256SigningKey)
        case ed25519(Ed25519SigningKey, algorithm: ProofAlgorithm = .edDSA)
    }

    package let key: Key

    package init(_ key: Key) { self.key = key }

    /// The `alg` this signer writes.
    package var algorithm: ProofAlgorithm {
        switch key {
        case .es256: .es256
        case .ed25519(_, let algorithm): algorithm
        }
    }

    /// The public key's `jwk`.
    package var publicJWK: JSONValue {
        switch key {
        case .es256(let key): key.publicJWK
        case .ed25519(let key, _): key.publicJWK
        }
    }

    /// The thumbprint a server binds a chain to.
    package var thumbprint: Thumbprint {
        switch key {
        case .es256(let key): key.thumbprint
        case .ed25519(let key, _): key.thumbprint
        }
    }

    /// A proof for a request with `method` to `url` (query and fragment are dropped, as
    /// `htu` must not carry them), presenting `token` (nil: none), issued at `now`, with the
    /// server's `nonce` if one was given, and a fresh random `jti` (128 bits).
    package func proof(method: String, url: String, token: String? = nil, nonce: String? = nil, now: Instant) -> String {
        var claims: [String: JSONValue] = [
            "jti": .string(Base64URL.encode(SecureRandom.bytes(16))),
            "htm": .string(method),
            "htu": .string(String(url.prefix { $0 != "?" && $0 != "#" })),
            "iat": .int(now.epochSeconds),
        ]
        if let token { claims["ath"] = .string(Base64URL.encode(TokenHash(of: token).bytes)) }
        if let nonce { claims["nonce"] = .string(nonce) }
        let header: [String: JSONValue] = ["typ": .string("dpop+jwt"), "alg": .string(algorithm.rawValue), "jwk": publicJWK]
        return sign(header: .object(header), claims: .object(claims))
    }

    /// The compact JWS of `header` and `claims` as given, signed with this key: for proofs
    /// that bend a rule on purpose (tests), and the last step of `proof`.
    package func sign(header: JSONValue, claims: JSONValue) -> String {
        sign(encodedHeader: Base64URL.encode(Array(header.text.utf8)), encodedClaims: Base64URL.encode(Array(claims.text.utf8)))
    }

    /// The compact JWS of the given base64url parts, signed with this key.
    package func sign(encodedHeader: String, encodedClaims: String) -> String {
        let input = encodedHeader + "." + encodedClaims
        let signature: [UInt8]
        switch key {
        case .es256(let key): signature = key.sign(Array(input.utf8))
        case .ed25519(let key, _): signature = key.sign(Array(input.utf8))
        }
        return input + "." + Base64URL.encode(signature)
    }
}

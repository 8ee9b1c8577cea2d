import BatonCore
import CCrypto

/// A P-256 private key that signs DPoP proofs with ES256, in software through libcrypto:
/// for tests, and for a client on Linux (where no Secure Enclave holds the key). Its only
/// secret is the 32-byte scalar, which `scalar` exposes for the caller to store (mode 0600).
package struct ES256SigningKey: Sendable {
    /// The private scalar d, 32 bytes big-endian (SEC 1 §2.3.7).
    package let scalar: [UInt8]
    /// The public point's x coordinate, 32 bytes.
    package let x: [UInt8]
    /// The public point's y coordinate, 32 bytes.
    package let y: [UInt8]

    /// A new random key.
    package static func generate() -> ES256SigningKey {
        var d = [UInt8](repeating: 0, count: 32), x = d, y = d
        // Fails only without a working random source, where no key is safe to make.
        guard baton_p256_generate(&d, &x, &y) == 1 else { fatalError("P-256 key generation failed") }
        return ES256SigningKey(scalar: d, x: x, y: y)
    }

    /// The key with the stored scalar `d`, or nil when `d` is not 32 bytes in [1, n-1].
    package init?(scalar d: [UInt8]) {
        guard d.count == 32 else { return nil }
        var x = [UInt8](repeating: 0, count: 32), y = x
        guard baton_p256_derive_public(d, &x, &y) == 1 else { return nil }
        self.init(scalar: d, x: x, y: y)
    }

    private init(scalar: [UInt8], x: [UInt8], y: [UInt8]) {
        self.scalar = scalar
        self.x = x
        self.y = y
    }

    /// The public key as the `jwk` header carries it (RFC 7518 §6.2.1), members sorted.
    package var publicJWK: JSONValue {
        .object(["kty": .string("EC"), "crv": .string("P-256"), "x": .string(Base64URL.encode(x)), "y": .string(Base64URL.encode(y))])
    }

    /// The RFC 7638 thumbprint of the public key (`jkt`).
    package var thumbprint: Thumbprint { ProofKey.p256(x: x, y: y).thumbprint }

    /// The ES256 signature of `message`: r ‖ s, 64 bytes (RFC 7518 §3.4).
    package func sign(_ message: [UInt8]) -> [UInt8] {
        let digest = Digest.sha256(message)
        var signature = [UInt8](repeating: 0, count: 64)
        // The scalar was checked when the key was made; ECDSA_do_sign fails only on allocation.
        guard baton_es256_sign(scalar, digest, &signature) == 1 else { fatalError("ES256 signing failed") }
        return signature
    }
}

import BatonCore
import CCrypto

/// An Ed25519 private key that signs DPoP proofs (`alg` `EdDSA` or `Ed25519`) through
/// libcrypto: for tests of the EdDSA path, and for clients that prefer it.
package struct Ed25519SigningKey: Sendable {
    /// The 32-byte private key (RFC 8032 §5.1.5's seed).
    package let seed: [UInt8]
    /// The 32-byte public key.
    package let x: [UInt8]

    /// A new random key.
    package static func generate() -> Ed25519SigningKey { Ed25519SigningKey(seed: SecureRandom.bytes(32))! }

    /// The key with the stored `seed`, or nil when it is not 32 bytes.
    package init?(seed: [UInt8]) {
        guard seed.count == 32 else { return nil }
        var signature = [UInt8](repeating: 0, count: 64), x = [UInt8](repeating: 0, count: 32)
        // Signing nothing derives the public key through the same one call.
        guard baton_ed25519_sign(seed, [], 0, &signature, &x) == 1 else { return nil }
        self.seed = seed
        self.x = x
    }

    /// The public key as the `jwk` header carries it (RFC 8037 §2).
    package var publicJWK: JSONValue {
        .object(["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(Base64URL.encode(x))])
    }

    /// The RFC 7638 thumbprint of the public key (`jkt`).
    package var thumbprint: Thumbprint { ProofKey.ed25519(x: x).thumbprint }

    /// The Ed25519 signature of `message`, 64 bytes.
    package func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: 64), x = [UInt8](repeating: 0, count: 32)
        guard baton_ed25519_sign(seed, message, message.count, &signature, &x) == 1 else { fatalError("Ed25519 signing failed") }
        return signature
    }
}

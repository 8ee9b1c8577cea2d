import BatonCore
import BatonDPoP
import CCrypto

/// One public key of an identity provider's JWK Set (RFC 7517 §5), as Baton verifies with it.
package struct IdentityKey: Equatable, Sendable {
    /// The key material.
    package enum Material: Equatable, Sendable {
        /// An RSA public key (RFC 7518 §6.3.1): big-endian modulus and exponent.
        case rsa(n: [UInt8], e: [UInt8])
        /// A P-256 point (RFC 7518 §6.2.1).
        case p256(x: [UInt8], y: [UInt8])
        /// An Ed25519 public key (RFC 8037 §2).
        case ed25519(x: [UInt8])
    }

    /// The smallest RSA modulus accepted, in bits (NIST SP 800-131A; RFC 7518 §3.3 "2048 bits or larger").
    package static let minimumRSABits = 2048
    /// The largest, so that a hostile JWKS cannot make each verification slow.
    package static let maximumRSABits = 8192

    /// `kid`, when the JWK has one.
    package let id: String?
    /// The JWK's `alg`, when it names one: the key is then used with that algorithm only.
    package let algorithm: String?
    package let material: Material

    /// The key `jwk` describes; nil for a key Baton does not use (another `kty` or curve, `use`
    /// other than `sig`, a private key's members, an RSA modulus outside the bounds): such keys
    /// in a provider's set are skipped, not errors, since providers publish encryption keys too.
    package init?(jwk: [String: JSONNode]) {
        if let use = jwk["use"], use.string != "sig" { return nil }
        // A published private key is not one to trust (and must not be used as if public).
        guard !jwk.keys.contains(where: { ["d", "p", "q", "dp", "dq", "qi", "oth", "k"].contains($0) }) else { return nil }
        if let kid = jwk["kid"] {
            guard let text = kid.string else { return nil }
            id = text
        } else {
            id = nil
        }
        if let alg = jwk["alg"] {
            guard let text = alg.string else { return nil }
            algorithm = text
        } else {
            algorithm = nil
        }
        switch jwk["kty"]?.string {
        case "RSA":
            guard let n = Self.bytes(jwk["n"]), let e = Self.bytes(jwk["e"]), n.first != 0, e.first != 0,
                  !e.isEmpty, e.count <= 8 else { return nil }
            let bits = n.count * 8 - (n.first.map { $0.leadingZeroBitCount } ?? 8)
            guard (Self.minimumRSABits...Self.maximumRSABits).contains(bits) else { return nil }
            material = .rsa(n: n, e: e)
        case "EC":
            guard jwk["crv"]?.string == "P-256", let x = Self.bytes(jwk["x"]), let y = Self.bytes(jwk["y"]),
                  x.count == 32, y.count == 32 else { return nil }
            material = .p256(x: x, y: y)
        case "OKP":
            guard jwk["crv"]?.string == "Ed25519", let x = Self.bytes(jwk["x"]), x.count == 32, Ed25519Point.isStrictlyValid(x) else { return nil }
            material = .ed25519(x: x)
        default:
            return nil
        }
    }

    private static func bytes(_ node: JSONNode?) -> [UInt8]? {
        guard let text = node?.string, !text.isEmpty else { return nil }
        return Base64URL.decode(Array(text.utf8)[...])
    }

    /// Whether this key may verify `algorithm`: its type matches, and its own `alg`, if any, is it.
    package func fits(_ algorithm: IdentityAlgorithm) -> Bool {
        if let own = self.algorithm, own != algorithm.rawValue { return false }
        switch (material, algorithm) {
        case (.rsa, .rs256), (.rsa, .ps256), (.p256, .es256), (.ed25519, .edDSA): return true
        default: return false
        }
    }

    /// Whether `signature` is this key's `algorithm` signature of `message` (false for a key
    /// that does not fit the algorithm, or that libcrypto refuses).
    package func verifies(_ signature: [UInt8], of message: [UInt8], with algorithm: IdentityAlgorithm) -> Bool {
        guard fits(algorithm) else { return false }
        switch material {
        case .rsa(let n, let e):
            // RFC 7518 §3.3/§3.5: the signature is exactly the modulus' length.
            guard signature.count == n.count else { return false }
            return baton_rsa_verify(n, n.count, e, e.count, algorithm == .ps256 ? 1 : 0, message, message.count,
                                    signature, signature.count) == 1
        case .p256(let x, let y):
            guard signature.count == 64 else { return false }
            return (try? ProofKey.p256(x: x, y: y).verifies(signature, of: message)) == true
        case .ed25519(let x):
            guard signature.count == 64 else { return false }
            return (try? ProofKey.ed25519(x: x).verifies(signature, of: message)) == true
        }
    }
}

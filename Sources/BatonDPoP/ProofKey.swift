import BatonCore
import CCrypto

/// The public key of a proof's `jwk` header (RFC 7517), checked against the proof's `alg`:
/// the only keys a proof may carry.
package enum ProofKey: Equatable, Sendable {
    /// A P-256 point (RFC 7518 §6.2.1): both coordinates 32 bytes, below p, on the curve.
    case p256(x: [UInt8], y: [UInt8])
    /// An Ed25519 public key (RFC 8037 §2): 32 bytes, a canonical encoding of a point not of
    /// small order (RFC 8032 §5.1.7, `Ed25519Point`).
    case ed25519(x: [UInt8])

    /// JWK members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1;
    /// RFC 8037 §2): a proof's key must be public (RFC 9449 §4.3 check 7).
    static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]
    private static let privateMemberSet = Set(privateMembers)

    /// The key `jwk` describes, for `algorithm`.
    /// - Throws: `.privateKeyInJWK` naming a private member (checked first: such a proof
    ///   has published its key, whatever else is wrong); `.invalidKey` otherwise.
    package init(jwk: [String: JSONNode], algorithm: ProofAlgorithm) throws(ProofError) {
        // One look-up per member the JWK has (usually four), then, only for a JWK that has a
        // private member, the first in `privateMembers`' order (the error names one member).
        if jwk.keys.contains(where: Self.privateMemberSet.contains), let member = Self.privateMembers.first(where: { jwk[$0] != nil }) {
            throw .privateKeyInJWK(member: member)
        }
        switch algorithm {
        case .es256:
            try Self.expect(jwk, type: "EC", curve: "P-256")
            let x = try Self.coordinate(jwk, "x"), y = try Self.coordinate(jwk, "y")
            // The curve check itself happens in libcrypto, with the signature (`verifies`);
            // checking here too would build the key twice per proof.
            self = .p256(x: x, y: y)
        case .edDSA, .ed25519:
            try Self.expect(jwk, type: "OKP", curve: "Ed25519")
            let x = try Self.coordinate(jwk, "x")
            // RFC 8032 §5.1.7 strict: libcrypto takes a small-order key, under which one constant
            // signature verifies every proof (issue 28, finding 5).
            guard Ed25519Point.isStrictlyValid(x) else { throw .invalidKey(reason: "x is not a strictly valid Ed25519 point (RFC 8032 §5.1.7)") }
            self = .ed25519(x: x)
        }
    }

    private static func expect(_ jwk: [String: JSONNode], type: String, curve: String) throws(ProofError) {
        guard jwk["kty"]?.string == type else { throw .invalidKey(reason: "kty must be \(type)") }
        guard jwk["crv"]?.string == curve else { throw .invalidKey(reason: "crv must be \(curve)") }
    }

    /// A member that must decode to 32 bytes: "the full size of a coordinate for the curve"
    /// (RFC 7518 §6.2.1.2), and an Ed25519 key's size (RFC 8032 §5.1.5).
    private static func coordinate(_ jwk: [String: JSONNode], _ name: String) throws(ProofError) -> [UInt8] {
        guard let text = jwk[name]?.string, let bytes = Base64URL.decode(Array(text.utf8)[...]), bytes.count == 32 else {
            throw .invalidKey(reason: "\(name) must be 32 bytes in base64url")
        }
        return bytes
    }

    /// The RFC 7638 thumbprint, from the canonical base64url of the key's bytes (the same
    /// text the JWK carried: `Base64URL.decode` accepts one encoding per byte string).
    package var thumbprint: Thumbprint {
        switch self {
        case .p256(let x, let y): Thumbprint(p256X: x, y: y)
        case .ed25519(let x): Thumbprint(ed25519X: x)
        }
    }

    /// Whether `signature` is this key's signature of `message`.
    /// - Throws: `.invalidKey` when the key is not a point of its curve.
    package func verifies(_ signature: [UInt8], of message: [UInt8]) throws(ProofError) -> Bool {
        // ES256's signature is r ‖ s, 32 bytes each (RFC 7518 §3.4), not DER; Ed25519's is 64 bytes.
        guard signature.count == 64 else { return false }
        let result: Int32
        switch self {
        case .p256(let x, let y):
            let digest = Digest.sha256(message)
            result = baton_es256_verify(x, y, digest, signature)
        case .ed25519(let x):
            // R of small order is refused as libsodium does: with it, S need not depend on the key.
            guard !Ed25519Point.hasSmallOrder(Array(signature[0..<32])) else { return false }
            result = baton_ed25519_verify(x, message, message.count, signature)
        }
        guard result >= 0 else { throw .invalidKey(reason: "the point is not on the curve") }
        return result == 1
    }
}

/// Wraps ring keys for storage in the database under a key derived from the key file's key,
/// so the database alone holds nothing usable, and every instance holding the key file reads
/// the same ring (docs/design.md, "The token key ring").
///
/// Encrypt-then-MAC with HMAC-SHA-256 as the PRF, under `TokenKey.derivedKey(label:
/// wrapLabel)`: a random 16-byte nonce n; pad = HMAC(k, "enc" ‖ id ‖ n) (32 bytes, the ring
/// key's length, so no counter is needed); c = ring key ⊕ pad; tag = HMAC(k, "tag" ‖ id ‖ n ‖ c).
/// Stored: n ‖ c ‖ tag, 80 bytes. The id in both inputs binds a wrapped key to its row: a
/// wrapped key copied to another id does not unwrap. Chosen over AES-GCM for using only the
/// HMAC already in `Crypto.swift` (no new C code); both are sound for a 32-byte random key.
package enum KeyWrap {
    /// The label of the wrapping key's derivation from the key file's key.
    package static let wrapLabel = "baton key ring wrap v1"
    /// Length of a wrapped key.
    package static let wrappedLength = 80

    /// `key` wrapped for the ring row `id`, under the key file's key `root`.
    package static func wrap(_ key: TokenKey, id: UInt32, under root: TokenKey) -> [UInt8] {
        wrap(key, id: id, nonce: SecureRandom.bytes(16), under: root)
    }

    /// `wrap` with a given nonce (tests).
    package static func wrap(_ key: TokenKey, id: UInt32, nonce: [UInt8], under root: TokenKey) -> [UInt8] {
        precondition(nonce.count == 16)
        let wrapping = HMACKey(root.derivedKey(label: wrapLabel))
        let pad = code(wrapping, "enc", id, nonce)
        let sealed = zip(key.bytes, pad).map { $0 ^ $1 }
        return nonce + sealed + code(wrapping, "tag", id, nonce + sealed)
    }

    /// The key wrapped in `wrapped` for row `id`; nil when the tag does not verify (another
    /// key file, another row, or altered bytes).
    package static func unwrap(_ wrapped: [UInt8], id: UInt32, under root: TokenKey) -> TokenKey? {
        guard wrapped.count == wrappedLength else { return nil }
        let wrapping = HMACKey(root.derivedKey(label: wrapLabel))
        let nonce = Array(wrapped[0..<16]), sealed = Array(wrapped[16..<48])
        guard Digest.constantTimeEquals(code(wrapping, "tag", id, nonce + sealed), wrapped[48...]) else { return nil }
        return TokenKey(bytes: zip(sealed, code(wrapping, "enc", id, nonce)).map { $0 ^ $1 })
    }

    private static func code(_ key: HMACKey, _ label: String, _ id: UInt32, _ data: [UInt8]) -> [UInt8] {
        var message = Array(label.utf8)
        withUnsafeBytes(of: id.bigEndian) { message += $0 }
        message += data
        return message.withUnsafeBytes { key.authenticationCode($0) }
    }
}

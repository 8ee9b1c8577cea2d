/// RFC 8032 §5.1.7's strict checks on an encoded Ed25519 point, made before libcrypto sees
/// a proof's key (issue 28, finding 5). libcrypto accepts a small-order public key: with the
/// identity (`01 00…00`), one constant signature (R the identity, S zero) verifies every
/// message, so a chain "bound" to it binds nothing and its proofs cost the sender nothing.
/// The checks are those of libsodium's `crypto_sign_verify_detached` (`ge25519_is_canonical`,
/// `ge25519_has_small_order`): byte comparisons, no field arithmetic.
package enum Ed25519Point {
    /// The encodings of the eight points of order 1, 2, 4 and 8, with the sign bit (bit 255)
    /// cleared, and the two non-canonical encodings of y = 0 and y = 1 (p and p + 1): y is
    /// all that is compared, since the sign bit only picks x (and for x = 0 it must be 0).
    static let smallOrder: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),                                    // y = 0: order 4
        [1] + [UInt8](repeating: 0, count: 31),                              // y = 1: the identity, order 1
        bytes("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),  // order 8
        bytes("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),  // order 8
        [0xEC] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],               // y = p − 1: order 2
        [0xED] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],               // y = p (0): order 4
        [0xEE] + [UInt8](repeating: 0xFF, count: 30) + [0x7F],               // y = p + 1 (1): order 1
    ]

    /// Whether `encoded` (32 bytes) is a point encoding RFC 8032 §5.1.7 accepts strictly:
    /// y below p, and not a point of small order.
    package static func isStrictlyValid(_ encoded: [UInt8]) -> Bool {
        encoded.count == 32 && isCanonical(encoded) && !hasSmallOrder(encoded)
    }

    /// y (the low 255 bits) below p = 2²⁵⁵ − 19 (RFC 8032 §5.1.3 step 1): y ≥ p only when
    /// bytes 1…30 are 0xFF, byte 31 is 0x7F without the sign bit, and byte 0 is 0xED or more.
    static func isCanonical(_ encoded: [UInt8]) -> Bool {
        !(encoded[31] & 0x7F == 0x7F && encoded[1...30].allSatisfy { $0 == 0xFF } && encoded[0] >= 0xED)
    }

    /// Whether y, the sign bit aside, is one of `smallOrder`.
    static func hasSmallOrder(_ encoded: [UInt8]) -> Bool {
        smallOrder.contains { small in
            small[0..<31].elementsEqual(encoded[0..<31]) && small[31] == encoded[31] & 0x7F
        }
    }

    private static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        for digit in hex.utf8 {
            let value = digit <= 57 ? digit - 48 : digit - 87
            if let h = high { out.append(h << 4 | value); high = nil } else { high = value }
        }
        return out
    }
}

/// Unpadded base64url (RFC 4648 §5), the alphabet of Baton's tokens.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// `bytes` encoded without padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `decode` for bytes in an array slice, specialized here: the generic one, called from
    /// another module, runs unspecialized (through witness tables) at several times the cost.
    package static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? { decoded(text) }

    /// The bytes `text` encodes, or nil for any character outside the alphabet, padding,
    /// an impossible length, or non-zero trailing bits (so each byte string has one encoding).
    package static func decode<Text: Collection>(_ text: Text) -> [UInt8]? where Text.Element == UInt8 { decoded(text) }

    private static func decoded<Text: Collection>(_ text: Text) -> [UInt8]? where Text.Element == UInt8 {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        // Every 4 characters are 3 bytes, 2 and 3 characters are 1 and 2: count * 3 / 4 in
        // all, so the writes below stay inside the buffer. Written through pointers, table
        // and output alike: this decodes every token that verify authenticates.
        var valid = true
        let bytes = [UInt8](unsafeUninitializedCapacity: count * 3 / 4) { buffer, initialized in
            decodeTable.withUnsafeBufferPointer { table in
                var accumulator: UInt32 = 0
                var bits: UInt32 = 0
                var written = 0
                for byte in text {
                    let value = table[Int(byte)]
                    guard value != 0xFF else { valid = false; break }
                    accumulator = accumulator << 6 | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        buffer[written] = UInt8(truncatingIfNeeded: accumulator >> bits)
                        written += 1
                    }
                }
                if valid, accumulator & ((1 << bits) - 1) != 0 { valid = false }
                initialized = written
            }
        }
        return valid ? bytes : nil
    }
}

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
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: encodedCount(bytes.count)) { buffer in
            bytes.withUnsafeBufferPointer { write($0, to: buffer.baseAddress!) }
        }
    }

    /// Appends the encoding of `bytes` (no padding) to `output`.
    package static func append(_ bytes: [UInt8], to output: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        let count = encodedCount(bytes.count)
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: count))
        output.withUnsafeMutableBufferPointer { buffer in
            bytes.withUnsafeBufferPointer { _ = write($0, to: buffer.baseAddress! + start) }
        }
    }

    /// The length of the unpadded encoding of `count` bytes.
    static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Writes the encoding of `bytes` at `out` (room for `encodedCount(bytes.count)` bytes);
    /// returns how many it wrote. Through pointers, table and output alike: tokens and
    /// thumbprints are encoded here on the hot paths.
    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int {
        alphabet.withUnsafeBufferPointer { alphabet in
            var index = 0, written = 0
            while index + 3 <= bytes.count {
                let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                out[written] = alphabet[Int(n >> 18 & 63)]
                out[written + 1] = alphabet[Int(n >> 12 & 63)]
                out[written + 2] = alphabet[Int(n >> 6 & 63)]
                out[written + 3] = alphabet[Int(n & 63)]
                index += 3
                written += 4
            }
            let rest = bytes.count - index
            if rest > 0 {
                let n = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                out[written] = alphabet[Int(n >> 18 & 63)]
                out[written + 1] = alphabet[Int(n >> 12 & 63)]
                written += 2
                if rest == 2 {
                    out[written] = alphabet[Int(n >> 6 & 63)]
                    written += 1
                }
            }
            return written
        }
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

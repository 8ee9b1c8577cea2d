/// A chain's identifier: a random positive 63-bit number, shown as 16 lowercase hex digits.
///
/// Random rather than sequential so that ids reveal nothing about login volume, and so
/// that a token can carry its chain id (under a MAC) without a lookup table.
package struct ChainID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The value stored in `chains.id`.
    package var rawValue: Int64

    package init(rawValue: Int64) { self.rawValue = rawValue }

    /// Parses any 16 hex digits, either case: the form `description` prints. Every such text
    /// is a well-formed id, even one no chain can have (zero, or the top bit set, which
    /// `random()` never makes): looking it up answers "not found" rather than "malformed".
    package init?(hex: String) {
        guard hex.utf8.count == 16, hex.utf8.allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }),
              let value = UInt64(hex, radix: 16)
        else { return nil }
        rawValue = Int64(bitPattern: value)
    }

    /// A fresh id from the system CSPRNG.
    package static func random() -> ChainID {
        while true {
            let value = Int64(bitPattern: SecureRandom.uint64() & 0x7FFF_FFFF_FFFF_FFFF)
            if value != 0 { return ChainID(rawValue: value) }
        }
    }

    /// 16 lowercase hex digits (written directly: verify names the chain in every answer and log line).
    package var description: String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            writeHex(into: buffer)
            return 16
        }
    }

    /// Appends `description`'s 16 bytes to `out` without making a String (16 bytes are past
    /// a small string's 15, so each `description` is an allocation).
    package func appendHex(to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer in
            writeHex(into: buffer)
            out.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }

    private func writeHex(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        var value = UInt64(bitPattern: rawValue)
        for index in stride(from: 15, through: 0, by: -1) {
            let digit = UInt8(value & 0xF)
            buffer[index] = digit < 10 ? 48 + digit : 87 + digit
            value >>= 4
        }
    }

    package static func < (lhs: ChainID, rhs: ChainID) -> Bool { lhs.rawValue < rhs.rawValue }
}

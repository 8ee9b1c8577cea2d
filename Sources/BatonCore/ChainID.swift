/// A chain's identifier: a random positive 63-bit number, shown as 16 lowercase hex digits.
///
/// Random rather than sequential so that ids reveal nothing about login volume, and so
/// that a token can carry its chain id (under a MAC) without a lookup table.
package struct ChainID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The value stored in `chains.id`.
    package var rawValue: Int64

    package init(rawValue: Int64) { self.rawValue = rawValue }

    /// Parses the 16-hex-digit form printed by `description`.
    package init?(hex: String) {
        guard hex.utf8.count == 16, let value = UInt64(hex, radix: 16), value <= UInt64(Int64.max), value > 0
        else { return nil }
        rawValue = Int64(value)
    }

    /// A fresh id from the system CSPRNG.
    package static func random() -> ChainID {
        while true {
            let value = Int64(bitPattern: SecureRandom.uint64() & 0x7FFF_FFFF_FFFF_FFFF)
            if value != 0 { return ChainID(rawValue: value) }
        }
    }

    package var description: String {
        let digits = String(UInt64(rawValue), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    package static func < (lhs: ChainID, rhs: ChainID) -> Bool { lhs.rawValue < rhs.rawValue }
}

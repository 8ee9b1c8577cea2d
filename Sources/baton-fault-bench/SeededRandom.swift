import Glibc

/// A seeded generator over glibc's `jrand48` (48-bit state held here, not the library's global
/// one), so that a run with the same seed makes the same choices: which exchange is hit, when
/// a thief strikes. Timing still varies from run to run.
struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: [UInt16]

    init(seed: UInt64) {
        state = [UInt16(truncatingIfNeeded: seed ^ (seed >> 48)), UInt16(truncatingIfNeeded: seed >> 16), UInt16(truncatingIfNeeded: seed >> 32)]
    }

    mutating func next() -> UInt64 {
        let high = UInt64(UInt32(bitPattern: Int32(truncatingIfNeeded: jrand48(&state))))
        let low = UInt64(UInt32(bitPattern: Int32(truncatingIfNeeded: jrand48(&state))))
        return high << 32 | low
    }

    /// True with probability `rate`.
    mutating func chance(_ rate: Double) -> Bool { Double.random(in: 0..<1, using: &self) < rate }
}

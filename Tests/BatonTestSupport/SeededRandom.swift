import Foundation

/// SplitMix64: a small seeded generator, so a failing run (a fault run, a differential test)
/// can be replayed with its seed.
package struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    /// The seed from `variable` in the environment when set, else a fresh one (print it).
    package static func seed(from variable: String) -> UInt64 {
        ProcessInfo.processInfo.environment[variable].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(UInt32.max))
    }

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An integer from the environment (a long variant's knob), or `fallback`.
package func environmentInt(_ variable: String, default fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[variable].flatMap { Int($0) } ?? fallback
}

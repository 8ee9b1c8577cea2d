/// xoshiro256** seeded through SplitMix64. Deterministic on every platform;
/// use it (never `SystemRandomNumberGenerator`) for simulation randomness.
package struct SimRandom: RandomNumberGenerator, Sendable {
  private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

  package init(seed: UInt64) {
    var x = seed
    func splitMix(_ x: inout UInt64) -> UInt64 {
      x &+= 0x9E37_79B9_7F4A_7C15
      var z = x
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    s0 = splitMix(&x); s1 = splitMix(&x); s2 = splitMix(&x); s3 = splitMix(&x)
  }

  @inline(__always)
  package mutating func next() -> UInt64 {
    let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
    let t = s1 << 17
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
    s2 ^= t
    s3 = (s3 << 45) | (s3 >> 19)
    return result
  }

  /// Uniform in `0..<n` (multiply-high; bias < n / 2^64).
  @inline(__always)
  package mutating func next(below n: Int) -> Int {
    precondition(n > 0)
    return Int(truncatingIfNeeded: UInt64(n).multipliedFullWidth(by: next()).high)
  }
}

import CCrypto
import Glibc

/// Bytes from the kernel's CSPRNG (`getrandom(2)`), which blocks only before the pool is
/// first seeded at boot.
package enum SecureRandom {
    /// `count` random bytes.
    package static func bytes(_ count: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        buffer.withUnsafeMutableBytes { fill($0) }
        return buffer
    }

    /// A random 64-bit value.
    package static func uint64() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var filled = 0
        while filled < buffer.count {
            let got = getrandom(buffer.baseAddress! + filled, buffer.count - filled, 0)
            if got < 0 {
                if errno == EINTR { continue }
                // No entropy source is a broken machine; issuing guessable tokens is worse.
                fatalError("getrandom failed: errno \(errno)")
            }
            filled += got
        }
    }
}

/// SHA-256 and HMAC-SHA-256 from OpenSSL's libcrypto, and a constant-time comparison.
package enum Digest {
    /// SHA-256 of `bytes` (32 bytes).
    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { sha256($0) }
    }

    /// SHA-256 of the bytes at `input` (32 bytes).
    package static func sha256(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBufferPointer { output in
            baton_sha256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, output.baseAddress)
        }
        return out
    }

    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths.
    package static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in constantTimeEquals(x, y) } }
    }

    /// `constantTimeEquals` for a slice (read in place, not copied).
    package static func constantTimeEquals(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in constantTimeEquals(x, y) } }
    }

    /// `constantTimeEquals` for bytes in memory.
    package static func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.count == 0 || CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0)
    }
}

/// An HMAC-SHA-256 key with its inner and outer hash states precomputed, so each MAC costs
/// three SHA-256 compressions and no allocation.
package struct HMACKey: @unchecked Sendable {
    private let prepared: baton_hmac_key

    package init(_ key: [UInt8]) {
        var prepared = baton_hmac_key()
        key.withUnsafeBufferPointer { baton_hmac_prepare(&prepared, $0.baseAddress, $0.count) }
        self.prepared = prepared
    }

    /// HMAC-SHA-256 of `message` (32 bytes).
    package func authenticationCode(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { output, initialized in
            authenticationCode(message, into: output)
            initialized = 32
        }
    }

    /// HMAC-SHA-256 of `message` written into `output` (at least 32 bytes): no allocation.
    package func authenticationCode(_ message: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) {
        precondition(output.count >= 32, "an HMAC-SHA-256 code is 32 bytes")
        withUnsafePointer(to: prepared) { key in
            baton_hmac_sha256(key, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count, output.baseAddress)
        }
    }
}

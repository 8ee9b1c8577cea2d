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
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, output.baseAddress)
            }
        }
        return out
    }

    /// HMAC-SHA-256 of `message` under `key` (32 bytes).
    package static func hmacSHA256(key: [UInt8], message: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        key.withUnsafeBytes { keyBytes in
            out.withUnsafeMutableBufferPointer { output in
                _ = HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                         message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                         output.baseAddress, &length)
            }
        }
        return out
    }

    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths.
    package static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                x.count == y.count && (x.count == 0 || CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0)
            }
        }
    }

    /// `constantTimeEquals` for a slice.
    package static func constantTimeEquals(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        constantTimeEquals(a, Array(b))
    }
}

#if !canImport(CryptoKit) && canImport(CCrypto)
import CCrypto
import Foundation

// Linux: P-256 and SHA-256 from libcrypto (the CCrypto system library, Linux only). The
// private key is its scalar d (32 bytes), the form the key file keeps.

extension DeviceKey {
    /// A new software key and its scalar, to be stored.
    /// - Throws: `.deviceKey` when libcrypto cannot make one.
    @_spi(Simulation) public static func generateSoftware() throws(BatonClientError) -> (key: DeviceKey, scalar: [UInt8]) {
        var d = [UInt8](repeating: 0, count: 32), x = d, y = d
        guard baton_p256_generate(&d, &x, &y) == 1 else { throw .deviceKey("libcrypto could not generate a P-256 key") }
        return (DeviceKey(software: d, x: x, y: y), d)
    }

    /// The software key with scalar `d`.
    /// - Throws: `.deviceKey` when `d` is not a P-256 scalar.
    init(scalar d: [UInt8]) throws(BatonClientError) {
        var x = [UInt8](repeating: 0, count: 32), y = x
        guard d.count == 32, baton_p256_derive_public(d, &x, &y) == 1 else { throw .deviceKey("the stored key is not a P-256 key") }
        self.init(software: d, x: x, y: y)
    }

    private init(software d: [UInt8], x: [UInt8], y: [UInt8]) {
        self.init(x: x, y: y) { message throws(BatonClientError) in
            let digest = SHA256Digest.of(message)
            var signature = [UInt8](repeating: 0, count: 64)
            guard baton_es256_sign(d, digest, &signature) == 1 else { throw .deviceKey("libcrypto could not sign") }
            return signature
        }
    }
}

/// SHA-256, for `ath` and thumbprints.
enum SHA256Digest {
    /// The 32-byte SHA-256 of `bytes`.
    static func of(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { baton_sha256($0.baseAddress, $0.count, &digest) }
        return digest
    }
}

/// `count` bytes from the kernel's CSPRNG (getrandom(2)).
@usableFromInline func secureRandomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        let got = bytes.withUnsafeMutableBytes { getrandom($0.baseAddress! + filled, count - filled, 0) }
        if got > 0 { filled += got } else if errno != EINTR { fatalError("getrandom failed: \(errno)") }
    }
    return bytes
}
#endif

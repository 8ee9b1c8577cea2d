#if canImport(CryptoKit)
import CryptoKit
import Foundation
import Security

// Apple platforms: CryptoKit. The same logic as DeviceKey+Software.swift (Linux), with the
// Secure Enclave where there is one. Compiled on Apple platforms only (docs/client.md,
// "What was compiled where").

extension DeviceKey {
    /// A key in the Secure Enclave: signs inside it; `dataRepresentation` is an opaque handle
    /// that only this device's enclave can use.
    init(secureEnclave key: SecureEnclave.P256.Signing.PrivateKey) {
        let point = key.publicKey.rawRepresentation  // x ‖ y, 64 bytes
        let shared = SendableValue(value: key)
        self.init(x: Array(point.prefix(32)), y: Array(point.suffix(32))) { message throws(BatonClientError) in
            do { return Array(try shared.value.signature(for: Data(message)).rawRepresentation) } catch {
                // A key under biometric access control (`DeviceKeyProtection.biometry`): a
                // cancelled or failed confirmation is the user's answer, not a broken key, and
                // never ends the session (F11 ends it for a broken one).
                if (error as NSError).domain == "com.apple.LocalAuthentication" {
                    throw .userAuthentication("the Secure Enclave key needs Face ID or Touch ID, not given: \(error.localizedDescription)")
                }
                throw .deviceKey("the Secure Enclave could not sign: \(error)")
            }
        }
    }

    /// A software key (the simulator, Macs without an enclave).
    init(software key: P256.Signing.PrivateKey) {
        let point = key.publicKey.rawRepresentation
        let shared = SendableValue(value: key)
        self.init(x: Array(point.prefix(32)), y: Array(point.suffix(32))) { message throws(BatonClientError) in
            do { return Array(try shared.value.signature(for: Data(message)).rawRepresentation) } catch {
                throw .deviceKey("could not sign: \(error)")
            }
        }
    }

    /// A new software key and its scalar, to be stored (the file store on macOS).
    @_spi(Simulation) public static func generateSoftware() throws(BatonClientError) -> (key: DeviceKey, scalar: [UInt8]) {
        let key = P256.Signing.PrivateKey()
        return (DeviceKey(software: key), Array(key.rawRepresentation))
    }

    /// The software key with scalar `d`.
    /// - Throws: `.deviceKey` when `d` is not a P-256 scalar.
    init(scalar d: [UInt8]) throws(BatonClientError) {
        do { self.init(software: try P256.Signing.PrivateKey(rawRepresentation: Data(d))) } catch {
            throw .deviceKey("the stored key is not a P-256 key")
        }
    }
}

/// SHA-256, for `ath` and thumbprints.
enum SHA256Digest {
    /// The 32-byte SHA-256 of `bytes`.
    static func of(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: Data(bytes))) }
}

/// `count` bytes from the system CSPRNG.
@usableFromInline func secureRandomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    guard SecRandomCopyBytes(kSecRandomDefault, count, &bytes) == errSecSuccess else { fatalError("SecRandomCopyBytes failed") }
    return bytes
}
#endif

import Foundation

/// Device keys in a Secure Enclave: the seam between `KeychainDeviceKey`'s logic and CryptoKit
/// (`CryptoKitEnclave`, Apple platforms), so that the logic runs where there is no enclave.
/// An enclave key leaves the enclave only as an opaque handle that this device's enclave
/// alone can turn back into a key.
protocol SecureEnclaveKeys: Sendable {
    /// Whether this device has an enclave (not the simulator, not a Mac without one).
    var isAvailable: Bool { get }
    /// A new key in the enclave and its handle.
    /// - Throws: `.deviceKey` when the enclave cannot make one.
    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data)
    /// The key of `handle`.
    /// - Throws: `.deviceKey` when the enclave cannot use it now, or ever (a handle from before
    ///   the device was erased, restored from a backup).
    func key(handle: Data) throws(BatonClientError) -> DeviceKey
}

/// No enclave (Linux, and as the stand-in's base where a test needs none).
struct NoSecureEnclave: SecureEnclaveKeys {
    var isAvailable: Bool { false }
    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data) { throw .deviceKey("no Secure Enclave") }
    func key(handle: Data) throws(BatonClientError) -> DeviceKey { throw .deviceKey("no Secure Enclave") }
}

#if canImport(CryptoKit)
import CryptoKit

/// CryptoKit's `SecureEnclave.P256.Signing`.
struct CryptoKitEnclave: SecureEnclaveKeys {
    var isAvailable: Bool { SecureEnclave.isAvailable }

    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data) {
        do {
            let key = try SecureEnclave.P256.Signing.PrivateKey()
            return (DeviceKey(secureEnclave: key), key.dataRepresentation)
        } catch {
            throw .deviceKey("the Secure Enclave could not make a key: \(error)")
        }
    }

    func key(handle: Data) throws(BatonClientError) -> DeviceKey {
        do { return DeviceKey(secureEnclave: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle)) } catch {
            throw .deviceKey("the Secure Enclave cannot use the stored key: \(error)")
        }
    }
}
#endif

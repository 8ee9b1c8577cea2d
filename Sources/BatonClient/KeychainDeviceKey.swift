#if canImport(CryptoKit) && canImport(Security)
import CryptoKit
import Foundation
import Security

/// The device key of a `KeychainCredentialStore`: a generic password item beside the
/// credentials' (same service, account `<account>.dpop-key`, same access group, so an app and
/// its extensions share it), readable after the first unlock, never migrated to another device
/// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
///
/// Where `SecureEnclave.isAvailable`, the key is made in the Secure Enclave and the item holds
/// its opaque `dataRepresentation` (useless on any other device); else (the simulator) a
/// software key's raw scalar. The item's first byte says which (1 enclave, 2 software).
///
/// Created once: `SecItemAdd` of a second key meets the first's item (`errSecDuplicateItem`),
/// and the loser reads the winner's. Mirrors `DeviceKeyFile` (Linux).
struct KeychainDeviceKey: Sendable {
    /// The item holding the key.
    let item: KeychainItem

    /// The key, created first when missing and `creating`.
    /// - Throws: `.credentialsUnavailable` while the Keychain is locked, `.store` for another
    ///   Keychain failure, `.deviceKey` when the key cannot be made or read.
    func load(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        if let key = try readKey() { return key }
        guard creating else { return nil }
        let key: DeviceKey
        var stored: [UInt8]
        if SecureEnclave.isAvailable {
            do {
                let enclaveKey = try SecureEnclave.P256.Signing.PrivateKey()
                key = DeviceKey(secureEnclave: enclaveKey)
                stored = [1] + Array(enclaveKey.dataRepresentation)
            } catch {
                throw .deviceKey("the Secure Enclave could not make a key: \(error)")
            }
        } else {
            let (software, scalar) = try DeviceKey.generateSoftware()
            key = software
            stored = [2] + scalar
        }
        defer { stored.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        // Another process added its key first: that one is the device's key.
        guard try item.add(Data(stored), replacing: false) else { return try readKey() }
        return key
    }

    /// The stored key; nil when there is no item, or when it holds an enclave handle this
    /// device's enclave cannot use (a backup restored onto another device).
    private func readKey() throws(BatonClientError) -> DeviceKey? {
        guard let data = try item.read() else { return nil }
        switch data.first {
        case 1:
            do { return DeviceKey(secureEnclave: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: data.dropFirst())) } catch {
                return nil
            }
        case 2: return try DeviceKey(scalar: Array(data.dropFirst()))
        default: throw .deviceKey("the Keychain's device key item has an unknown form")
        }
    }
}
#endif

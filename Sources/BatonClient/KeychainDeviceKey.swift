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
    let service: String
    let account: String
    let accessGroup: String?

    private var query: [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: service, kSecAttrAccount as String: account]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        #if os(macOS)
        query[kSecUseDataProtectionKeychain as String] = true
        #endif
        return query
    }

    /// The key, created first when missing and `creating`.
    /// - Throws: `.credentialsUnavailable` while the Keychain is locked, `.deviceKey` otherwise.
    func load(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        if let key = try read() { return key }
        guard creating else { return nil }
        let key: DeviceKey
        var item: [UInt8]
        if SecureEnclave.isAvailable {
            do {
                let enclaveKey = try SecureEnclave.P256.Signing.PrivateKey()
                key = DeviceKey(secureEnclave: enclaveKey)
                item = [1] + Array(enclaveKey.dataRepresentation)
            } catch {
                throw .deviceKey("the Secure Enclave could not make a key: \(error)")
            }
        } else {
            let (software, scalar) = try DeviceKey.generateSoftware()
            key = software
            item = [2] + scalar
        }
        let attributes: [String: Any] = [kSecValueData as String: Data(item),
                                         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        let status = SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        item.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        if status == errSecDuplicateItem, let existing = try read() { return existing }  // another process won
        if status == errSecInteractionNotAllowed { throw .credentialsUnavailable("the Keychain is locked (OSStatus \(status))") }
        guard status == errSecSuccess else { throw .deviceKey("Keychain write of the device key failed (OSStatus \(status))") }
        return key
    }

    /// The stored key; nil when there is no item.
    private func read() throws(BatonClientError) -> DeviceKey? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        if status == errSecInteractionNotAllowed { throw .credentialsUnavailable("the Keychain is locked (OSStatus \(status))") }
        guard status == errSecSuccess, let data = result as? Data, let kind = data.first else {
            throw .deviceKey("Keychain read of the device key failed (OSStatus \(status))")
        }
        switch kind {
        case 1:
            do { return DeviceKey(secureEnclave: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: data.dropFirst())) } catch {
                // An enclave handle from another device (a restored backup) cannot be used here.
                return nil
            }
        case 2: return try DeviceKey(scalar: Array(data.dropFirst()))
        default: throw .deviceKey("the Keychain's device key item has an unknown form")
        }
    }
}
#endif

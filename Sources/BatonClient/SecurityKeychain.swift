#if canImport(Security)
import Foundation
import Security

/// The real Keychain: generic password items, readable after the first unlock since boot and
/// never migrated to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`); on
/// macOS in the data protection Keychain (`kSecUseDataProtectionKeychain`), which behaves as on
/// iOS. Apple platforms only.
struct SecurityKeychain: KeychainBackend {
    /// The watch of this process's Keychain (one Keychain, one watch).
    var missingEntitlement: MissingEntitlementWatch { .process }

    private func query(_ key: KeychainItemKey) -> [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: key.service, kSecAttrAccount as String: key.account]
        if let group = key.accessGroup { query[kSecAttrAccessGroup as String] = group }
        #if os(macOS)
        query[kSecUseDataProtectionKeychain as String] = true
        #endif
        return query
    }

    func read(_ key: KeychainItemKey) -> (status: Int32, data: Data?, accessGroup: String?) {
        var search = query(key)
        search[kSecReturnData as String] = true
        search[kSecReturnAttributes as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        let attributes = result as? [String: Any]
        return (status, attributes?[kSecValueData as String] as? Data, attributes?[kSecAttrAccessGroup as String] as? String)
    }

    func add(_ key: KeychainItemKey, data: Data) -> Int32 {
        var attributes = query(key)
        attributes[kSecValueData as String] = data
        attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        return SecItemAdd(attributes as CFDictionary, nil)
    }

    func update(_ key: KeychainItemKey, data: Data) -> Int32 {
        let changes: [String: Any] = [kSecValueData as String: data,
                                      kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        return SecItemUpdate(query(key) as CFDictionary, changes as CFDictionary)
    }

    func delete(_ key: KeychainItemKey) -> Int32 {
        SecItemDelete(query(key) as CFDictionary)
    }
}
#endif

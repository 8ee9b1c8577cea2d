#if canImport(Security)
import Foundation
import Security

/// One generic password item in the Keychain (service, account, access group): the reads and
/// writes the credential store and the device key share. Readable after the first unlock since
/// boot and never migrated to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`);
/// on macOS in the data protection Keychain (`kSecUseDataProtectionKeychain`).
struct KeychainItem: Sendable {
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

    /// The item's data; nil when there is no item.
    /// - Throws: `.credentialsUnavailable` while the device is locked (`errSecInteractionNotAllowed`),
    ///   `.store` for any other Keychain failure.
    func read() throws(BatonClientError) -> Data? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        try Self.check(status, "read")
        return result as? Data
    }

    /// Adds the item with `data`; with `replacing`, an existing item is updated instead.
    /// - Returns: false when the item exists and `replacing` is false (someone added it first).
    /// - Throws: as `read()`.
    func add(_ data: Data, replacing: Bool) throws(BatonClientError) -> Bool {
        let attributes: [String: Any] = [kSecValueData as String: data,
                                         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        if status == errSecDuplicateItem {
            guard replacing else { return false }
            status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        }
        try Self.check(status, "write")
        return true
    }

    /// Throws for a failed Keychain call.
    private static func check(_ status: OSStatus, _ operation: String) throws(BatonClientError) {
        if status == errSecInteractionNotAllowed { throw .credentialsUnavailable("the Keychain is locked (OSStatus \(status))") }
        guard status == errSecSuccess else { throw .store("Keychain \(operation) failed (OSStatus \(status))") }
    }
}
#endif

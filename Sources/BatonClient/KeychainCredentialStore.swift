#if canImport(Security)
import Foundation
import Security

/// Credentials in the Keychain (a generic password item), readable after the first unlock
/// since boot and never migrated to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
///
/// An app and its extensions share the item through a Keychain access group. Give them a lock
/// file in the shared App Group container as well (`lockFile`), so that they exchange a token
/// once between them; without it, only the sessions sharing this store value exclude each other.
public struct KeychainCredentialStore: CredentialStore {
    /// The item's service (`kSecAttrService`), e.g. your bundle identifier.
    public let service: String
    /// The item's account (`kSecAttrAccount`).
    public let account: String
    /// The shared Keychain access group, if any (`kSecAttrAccessGroup`).
    public let accessGroup: String?
    /// A file in a container every sharing process can open (App Group), for `flock`.
    public let lockFile: URL?
    private let processLock = AsyncLock()

    /// A store for one item.
    public init(service: String, account: String = "baton", accessGroup: String? = nil, lockFile: URL? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.lockFile = lockFile
    }

    private var query: [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: service, kSecAttrAccount as String: account]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    /// Reads the item; nil when missing or unreadable as credentials.
    public func load() throws(BatonClientError) -> StoredCredentials? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw .store("Keychain read failed (OSStatus \(status))") }
        return (result as? Data).flatMap(StoredCredentials.decode)
    }

    /// Updates the item, or adds it when missing.
    public func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        let data: Data
        do { data = try credentials.encoded() } catch { throw .store("cannot encode credentials: \(error)") }
        let attributes: [String: Any] = [kSecValueData as String: data,
                                         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw .store("Keychain write failed (OSStatus \(status))") }
    }

    /// `flock` on `lockFile` when given, else a lock among this process's sessions.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock {
        if let lockFile { return try await FileLock(path: lockFile.path).acquire() }
        return await processLock.acquire()
    }
}
#endif

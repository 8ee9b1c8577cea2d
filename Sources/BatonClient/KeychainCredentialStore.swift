#if canImport(Security)
import Foundation
import Security

/// Credentials in the Keychain (a generic password item), readable after the first unlock
/// since boot and never migrated to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
/// On macOS the item goes to the data protection Keychain (`kSecUseDataProtectionKeychain`),
/// which behaves as on iOS.
///
/// An app and its extensions share the item through a Keychain access group; they then must
/// take turns through a lock file in a container every one of them can open: pass `appGroup`
/// (the lock file goes into that App Group's container) or `lockFile`. A shared item without
/// either is refused at the first exchange (`lock()` throws): two processes exchanging one token
/// twice would end the session for both.
///
/// Compiled for Apple platforms only; this repository's builds and tests run on Linux, where
/// this file is skipped (docs/client.md, "What was compiled where").
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

    /// A store for one item. With `appGroup`, the lock file is `baton-<account>.lock` in that
    /// App Group's container (`FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`).
    public init(service: String, account: String = "baton", accessGroup: String? = nil, appGroup: String? = nil, lockFile: URL? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.lockFile = lockFile ?? appGroup
            .flatMap { FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: $0) }?
            .appendingPathComponent("baton-\(account).lock")
    }

    private var item: KeychainItem { KeychainItem(service: service, account: account, accessGroup: accessGroup) }

    /// Reads the item; nil when missing or unreadable as credentials.
    /// - Throws: `.credentialsUnavailable` while the device is locked (`errSecInteractionNotAllowed`),
    ///   `.store` for any other Keychain failure.
    public func load() throws(BatonClientError) -> StoredCredentials? {
        try item.read().flatMap(StoredCredentials.decode)
    }

    /// Adds the item, or updates it when it exists: two processes adding at once both succeed
    /// (the second's add meets the first's item and updates it).
    public func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        let data: Data
        do { data = try credentials.encoded() } catch { throw .store("cannot encode credentials: \(error)") }
        _ = try item.add(data, replacing: true)
    }

    /// The device key (DPoP): in the Secure Enclave where available, in an item beside this
    /// one (account `<account>.dpop-key`, same access group); see `KeychainDeviceKey`.
    public func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        #if canImport(CryptoKit)
        try KeychainDeviceKey(item: KeychainItem(service: service, account: account + ".dpop-key", accessGroup: accessGroup))
            .load(creating: creating)
        #else
        nil
        #endif
    }

    /// `flock` on `lockFile` when given, else a lock among this process's sessions.
    /// - Throws: `.store` for a shared item (`accessGroup`) without a lock file.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock {
        if let lockFile { return try await FileLock(path: lockFile.path).acquire() }
        if accessGroup != nil {
            throw .store("a Keychain item shared through an access group needs a lock file (appGroup: or lockFile:)")
        }
        return await processLock.acquire()
    }
}
#endif

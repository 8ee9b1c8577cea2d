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
/// Apple platforms only; its logic (`KeychainStoreCore`) is tested on Linux against a stand-in
/// Keychain (docs/client.md, "What was compiled where").
public struct KeychainCredentialStore: CredentialStore {
    /// The item's service (`kSecAttrService`), e.g. your bundle identifier.
    public let service: String
    /// The item's account (`kSecAttrAccount`).
    public let account: String
    /// The shared Keychain access group, if any (`kSecAttrAccessGroup`).
    public let accessGroup: String?
    /// A file in a container every sharing process can open (App Group), for `flock`.
    public let lockFile: URL?
    private let core: KeychainStoreCore

    /// A store for one item. With `appGroup`, the lock file is `baton-<account>.lock` in that
    /// App Group's container (`FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`).
    /// With `deviceKeyProtection: .biometry(reuseFor:)`, a device key made from now on in the
    /// Secure Enclave signs only after Face ID or Touch ID (`DeviceKeyProtection`).
    public init(service: String, account: String = "baton", accessGroup: String? = nil, appGroup: String? = nil, lockFile: URL? = nil,
                deviceKeyProtection: DeviceKeyProtection = .none) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        let container = appGroup.flatMap { FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: $0) }
        self.lockFile = lockFile ?? container?.appendingPathComponent("baton-\(account).lock")
        let problem = lockFile == nil && appGroup != nil && container == nil
            ? "the App Group '\(appGroup!)' has no container in this process: check the App Groups entitlement of every target"
            : nil
        core = KeychainStoreCore(key: KeychainItemKey(service: service, account: account, accessGroup: accessGroup),
                                 lockFile: self.lockFile?.path, lockFileProblem: problem, backend: SecurityKeychain(),
                                 enclave: Self.enclave(deviceKeyProtection), bundleIdentifier: Bundle.main.bundleIdentifier)
    }

    #if canImport(CryptoKit)
    private static func enclave(_ protection: DeviceKeyProtection) -> any SecureEnclaveKeys { CryptoKitEnclave(protection: protection) }
    #else
    private static func enclave(_ protection: DeviceKeyProtection) -> any SecureEnclaveKeys { NoSecureEnclave() }
    #endif

    /// Reads the item; nil when missing or unreadable as credentials.
    /// - Throws: `.credentialsUnavailable` while the Keychain cannot be read now (a locked
    ///   device, `errSecInteractionNotAllowed`; at launch `errSecNotAvailable`,
    ///   `errSecMissingEntitlement`), `.store` for any other Keychain failure.
    public func load() throws(BatonClientError) -> StoredCredentials? { try core.load() }

    /// Adds the item, or updates it when it exists: two processes adding at once both succeed
    /// (the second's add meets the first's item and updates it).
    public func save(_ credentials: StoredCredentials) throws(BatonClientError) { try core.save(credentials) }

    /// The device key (DPoP): in the Secure Enclave where available, in an item beside this
    /// one (account `<account>.dpop-key`, same access group); see `KeychainDeviceKey`.
    public func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? { try core.deviceKey(creating: creating) }

    /// Deletes the device key item (`BatonSession.resetDeviceKey()`).
    public func resetDeviceKey() throws(BatonClientError) { try core.resetDeviceKey() }

    /// `flock` on `lockFile` when given; else, for an item in the app's own access group, a
    /// lock among this process's stores of the same item.
    /// - Throws: `.store` for an item other processes can read (a shared access group, given
    ///   or the Keychain's default) without a lock file, or an `appGroup` with no container.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock { try await core.lock() }
}
#endif

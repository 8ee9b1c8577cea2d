import Foundation

/// What `KeychainCredentialStore` does, over a `KeychainBackend` and a `SecureEnclaveKeys`, so
/// that it runs and is tested where there is no Keychain.
struct KeychainStoreCore: Sendable {
    /// The credentials' item as configured (the access group may be nil).
    let key: KeychainItemKey
    /// A lock file every sharing process can open, if configured and resolved.
    let lockFile: String?
    /// Why the configured App Group gave no lock file (nil when fine or not configured).
    let lockFileProblem: String?
    let backend: any KeychainBackend
    let enclave: any SecureEnclaveKeys
    /// This app's bundle identifier: its own access group is `<team>.<bundle identifier>`.
    let bundleIdentifier: String?

    init(key: KeychainItemKey, lockFile: String?, lockFileProblem: String?, backend: any KeychainBackend,
         enclave: any SecureEnclaveKeys, bundleIdentifier: String?) {
        self.key = key
        self.lockFile = lockFile
        self.lockFileProblem = lockFileProblem
        self.backend = backend
        self.enclave = enclave
        self.bundleIdentifier = bundleIdentifier
    }

    private var item: KeychainItem { KeychainItem(key: key, backend: backend) }
    private var keyItem: KeychainItem {
        KeychainItem(key: KeychainItemKey(service: key.service, account: key.account + ".dpop-key", accessGroup: key.accessGroup),
                     backend: backend)
    }

    /// The stored credentials; nil when missing or unreadable as credentials.
    /// - Throws: `.credentialsUnavailable` for a newer format (F14), and the item's errors.
    func load() throws(BatonClientError) -> StoredCredentials? {
        try moveToConfiguredGroup(item)
        guard let data = try item.read() else { return nil }
        return try StoredCredentials.decodeStored(data)
    }

    /// H4, the migration: an app update that adds `accessGroup:` (to share the session with a
    /// new extension) finds nothing in that group, and used to log everyone out. An item of the
    /// same service and account in another of the app's groups (the one the earlier version's
    /// add went to) is copied into the configured group, then deleted there. Two processes
    /// doing it at once: the second's add meets the first's copy, and its delete finds nothing.
    private func moveToConfiguredGroup(_ item: KeychainItem) throws(BatonClientError) {
        guard let group = item.key.accessGroup else { return }
        let (status, _, _) = backend.read(item.key)
        guard status == KeychainStatus.itemNotFound else { return }
        var anywhere = item.key
        anywhere.accessGroup = nil
        let (found, data, oldGroup) = backend.read(anywhere)
        guard found == KeychainStatus.success, let data, let oldGroup, oldGroup != group else { return }
        _ = try item.add(data, replacing: false)
        // The copy is in place: a failure to delete the old one costs a stale copy in a group
        // the store no longer reads, never the session.
        try? KeychainItem(key: KeychainItemKey(service: item.key.service, account: item.key.account, accessGroup: oldGroup),
                          backend: backend).delete()
    }

    /// Adds the item, or updates it when it exists.
    func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        let data: Data
        do { data = try credentials.encoded() } catch { throw .store("cannot encode credentials: \(error)") }
        _ = try item.add(data, replacing: true)
    }

    /// The device key item beside the credentials'.
    func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        try moveToConfiguredGroup(keyItem)
        return try KeychainDeviceKey(item: keyItem, enclave: enclave).load(creating: creating)
    }

    /// Deletes the device key item.
    func resetDeviceKey() throws(BatonClientError) {
        try KeychainDeviceKey(item: keyItem, enclave: enclave).delete()
    }

    /// `flock` on the lock file when there is one; else, for an item in this app's own access
    /// group only, a lock among this process's stores of the same item (H4).
    /// - Throws: `.store` when a configured App Group has no container here, or when the item
    ///   is in a group other processes can read and there is no lock file;
    ///   `.credentialsUnavailable` when the item's group cannot be learnt now.
    func lock() async throws(BatonClientError) -> CredentialStoreLock {
        if let lockFileProblem { throw .store(lockFileProblem) }
        if let lockFile { return try await FileLock(path: lockFile).acquire() }
        let group = try effectiveGroup()
        guard isOwnGroup(group) else {
            throw .store("the Keychain item is in the access group '\(group)', which other apps and extensions of the team "
                         + "can read: give the store a lock file every sharing process can open (appGroup: or lockFile:)")
        }
        return await ProcessLocks.lock(for: KeychainItemKey(service: key.service, account: key.account, accessGroup: group)).acquire()
    }

    /// The access group the item is in, or would be added to: the configured one; else the one
    /// the stored item is in; else the Keychain's default for this app (the first
    /// `keychain-access-groups` entry, else the application identifier), learnt by adding a
    /// probe item and reading its group back.
    func effectiveGroup() throws(BatonClientError) -> String {
        if let group = key.accessGroup { return group }
        let (status, _, group) = backend.read(key)
        if status == KeychainStatus.success, let group { return group }
        if status != KeychainStatus.itemNotFound { try KeychainItem(key: key, backend: backend).check(status, "read") }
        // A probe of its own per call: two callers never delete each other's.
        let probe = KeychainItemKey(service: key.service, account: key.account + ".baton-group-probe." + UUID().uuidString, accessGroup: nil)
        let added = backend.add(probe, data: Data())
        if added != KeychainStatus.duplicateItem { try KeychainItem(key: probe, backend: backend).check(added, "write") }
        let (read, _, probeGroup) = backend.read(probe)
        _ = backend.delete(probe)
        try KeychainItem(key: probe, backend: backend).check(read, "read")
        guard let probeGroup else { throw .store("the Keychain did not say which access group its items go to") }
        return probeGroup
    }

    /// Whether `group` is this app's own (`<team>.<bundle identifier>`), which no other app or
    /// extension can read. Unknown when there is no bundle identifier: then not.
    func isOwnGroup(_ group: String) -> Bool {
        guard let bundleIdentifier, let dot = group.firstIndex(of: ".") else { return false }
        return group[group.index(after: dot)...] == bundleIdentifier
    }
}

/// One `AsyncLock` per Keychain item (service, account, group) in this process, shared by
/// every store value for that item.
enum ProcessLocks {
    private static let registry = Registry()

    /// The lock for `item`.
    static func lock(for item: KeychainItemKey) -> AsyncLock { registry.lock(for: item) }

    private final class Registry: @unchecked Sendable {
        // @unchecked: `locks` is guarded by `mutex`.
        private let mutex = NSLock()
        private var locks: [KeychainItemKey: AsyncLock] = [:]

        func lock(for item: KeychainItemKey) -> AsyncLock {
            mutex.lock()
            defer { mutex.unlock() }
            if let lock = locks[item] { return lock }
            let lock = AsyncLock()
            locks[item] = lock
            return lock
        }
    }
}

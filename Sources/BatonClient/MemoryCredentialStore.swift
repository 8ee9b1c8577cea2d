import Foundation

/// Credentials in memory only: gone when the process ends. For tests, previews, and apps that
/// want a login per launch. Sessions sharing one instance take turns through an async lock.
public final class MemoryCredentialStore: CredentialStore, @unchecked Sendable {
    private let mutex = NSLock()
    private var credentials: StoredCredentials?
    private var key: DeviceKey?
    private let exclusive = AsyncLock()

    /// A store holding `credentials` (nil: empty).
    public init(_ credentials: StoredCredentials? = nil) { self.credentials = credentials }

    /// The held credentials.
    public func load() throws(BatonClientError) -> StoredCredentials? {
        mutex.lock()
        defer { mutex.unlock() }
        return credentials
    }

    /// Replaces the held credentials.
    public func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        mutex.lock()
        defer { mutex.unlock() }
        self.credentials = credentials
    }

    /// A software device key held in memory as long as this instance (made at the first login).
    public func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        mutex.lock()
        defer { mutex.unlock() }
        if key == nil, creating { key = try DeviceKey.generateSoftware().key }
        return key
    }

    /// Forgets the device key (tests: a key lost while the session is bound to it).
    public func forgetDeviceKey() {
        mutex.lock()
        defer { mutex.unlock() }
        key = nil
    }

    /// Forgets the device key (`BatonSession.resetDeviceKey()`).
    public func resetDeviceKey() throws(BatonClientError) { forgetDeviceKey() }

    /// Waits for exclusive use among the sessions sharing this instance.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock {
        await exclusive.acquire()
    }
}

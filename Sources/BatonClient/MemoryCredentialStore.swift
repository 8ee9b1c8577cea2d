import Foundation

/// Credentials in memory only: gone when the process ends. For tests, previews, and apps that
/// want a login per launch. Sessions sharing one instance take turns through an async lock.
public final class MemoryCredentialStore: CredentialStore, @unchecked Sendable {
    private let mutex = NSLock()
    private var credentials: StoredCredentials?
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

    /// Waits for exclusive use among the sessions sharing this instance.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock {
        await exclusive.acquire()
    }
}

import Foundation

/// The session's view of the app's store: every call goes to the store as it is, and the
/// installation stamp (`StoredCredentials.installation`) of the last credentials read is kept,
/// so that a save made without a stamp of this process's own (no marker yet, or none in this
/// process: an extension) keeps the one the store holds instead of erasing the evidence of a
/// reinstall, without reading the store again (review of issue 42's F1, M2 and M3).
final class StampKeepingStore: CredentialStore, @unchecked Sendable {
    let inner: any CredentialStore
    private let lock = NSLock()
    private var lastStamp: String?

    init(_ inner: any CredentialStore) { self.inner = inner }

    /// The stamp of the credentials last read or written, if they had one.
    var lastSeenStamp: String? { lock.withLock { lastStamp } }

    func load() throws(BatonClientError) -> StoredCredentials? {
        let credentials = try inner.load()
        if let stamp = credentials?.installation { lock.withLock { lastStamp = stamp } }
        return credentials
    }

    func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        try inner.save(credentials)
        if let stamp = credentials.installation { lock.withLock { lastStamp = stamp } }
    }

    func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
    func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? { try inner.deviceKey(creating: creating) }
    func resetDeviceKey() throws(BatonClientError) { try inner.resetDeviceKey() }
}

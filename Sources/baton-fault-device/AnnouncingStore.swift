import BatonClient
import Foundation

/// A `FileCredentialStore` that, once armed, says `persisting <chain> <generation>` on standard
/// output before it saves a new token (an exchange's successor) and waits for `continue` on
/// standard input: the benchmark kills the process there (after the exchange answer arrived,
/// before it was persisted) or lets it go on. Disarmed it is the file store unchanged.
final class AnnouncingStore: CredentialStore, @unchecked Sendable {
    private let file: FileCredentialStore
    private let lock = NSLock()
    private var isArmed = false

    /// The file store at `path`.
    init(path: String) { file = FileCredentialStore(path: path) }

    /// From now on every save of a bundle is announced and waits for the benchmark's word.
    func arm() {
        lock.lock()
        isArmed = true
        lock.unlock()
    }

    func load() throws(BatonClientError) -> StoredCredentials? { try file.load() }

    func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        lock.lock()
        let armed = isArmed
        lock.unlock()
        // Only a new token is announced: the client also saves the bundle it holds (with its
        // exchange claim, for the processes sharing the store), which is no successor.
        if armed, let bundle = credentials.bundle, ((try? file.load()) ?? nil)?.bundle?.token != bundle.token {
            report("persisting \(bundle.chainID) \(bundle.generation)")
            // The benchmark answers "continue", or kills this process while it waits here.
            guard readLine() == "continue" else { exit(66) }
        }
        try file.save(credentials)
    }

    func lock() async throws(BatonClientError) -> CredentialStoreLock { try await file.lock() }

    func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? { try file.deviceKey(creating: creating) }

    func resetDeviceKey() throws(BatonClientError) { try file.resetDeviceKey() }
}

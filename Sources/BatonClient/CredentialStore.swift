import Foundation

/// Where the session keeps its credentials between launches, and how processes sharing them
/// take turns.
///
/// An exchange runs as lock → `load()` → (exchange only if the stored token is still the one
/// that failed) → `save(_:)` → unlock, so that an app and its extension (or two processes on
/// one file) exchange a token once between them. A new bundle is saved before it is used.
public protocol CredentialStore: Sendable {
    /// The stored credentials; nil when nothing is stored. A store that cannot make sense of
    /// what it holds (corrupt, truncated) answers nil: the user is logged out, the app goes on.
    /// - Throws: `BatonClientError.store` when the storage itself fails (permission, I/O).
    func load() throws(BatonClientError) -> StoredCredentials?

    /// Replaces the stored credentials atomically: a reader sees the old or the new, never a mix.
    /// - Throws: `BatonClientError.store`.
    func save(_ credentials: StoredCredentials) throws(BatonClientError)

    /// Waits for exclusive use of the store among every session and process sharing it.
    /// The lock is held until `unlock()` of the returned handle.
    /// - Throws: `BatonClientError.store` when the lock cannot be taken.
    func lock() async throws(BatonClientError) -> CredentialStoreLock

    /// The device key that proves possession of bound (DPoP) tokens, kept across logins and
    /// shared by every process sharing the store; made first when missing and `creating` (the
    /// session asks to create only at login, with the store locked). Nil when there is none.
    /// The default answers nil: a store of your own keeps no key, so its sessions log in
    /// unbound (Bearer) until it implements this.
    /// - Throws: `.credentialsUnavailable` when the key cannot be read now (a locked Keychain),
    ///   `.deviceKey` when it cannot be made or read.
    func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey?

    /// Deletes the device key, so that the next `deviceKey(creating: true)` makes a new one
    /// (`BatonSession.resetDeviceKey()`; called with the store locked). The default does nothing.
    func resetDeviceKey() throws(BatonClientError)
}

extension CredentialStore {
    /// No device key: sessions on this store log in unbound.
    public func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? { nil }

    /// No device key to delete.
    public func resetDeviceKey() throws(BatonClientError) {}
}

/// A held store lock. `unlock()` releases it; calling it twice is harmless.
public protocol CredentialStoreLock: Sendable {
    /// Releases the lock.
    func unlock()
}

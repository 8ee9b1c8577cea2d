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
}

/// A held store lock. `unlock()` releases it; calling it twice is harmless.
public protocol CredentialStoreLock: Sendable {
    /// Releases the lock.
    func unlock()
}

@testable import BatonClient
import Foundation

/// A memory store that fails on cue, as a real one does now and then: the next `failingSaves`
/// saves throw a store error (disk full), the next `unavailableLoads` loads throw
/// "credentials unavailable" (a locked Keychain: `errSecInteractionNotAllowed`).
final class FlakyStore: CredentialStore, @unchecked Sendable {
    private let inner = MemoryCredentialStore()
    private let mutex = NSLock()
    private var savesToFail = 0
    private var savesToPass = 0
    private var loadsToFail = 0
    private var loadsToPass = 0

    /// Makes `count` saves fail after the next `passing` ones.
    func failSaves(_ count: Int, after passing: Int = 0) { mutex.withLock { (savesToFail, savesToPass) = (count, passing) } }
    /// Makes `count` loads report the store unavailable after the next `passing` ones.
    func failLoads(_ count: Int, after passing: Int = 0) { mutex.withLock { (loadsToFail, loadsToPass) = (count, passing) } }

    /// What the store holds, without failing.
    var contents: StoredCredentials? { try? inner.load() }

    func load() throws(BatonClientError) -> StoredCredentials? {
        let fail = mutex.withLock { () -> Bool in
            if loadsToPass > 0 {
                loadsToPass -= 1
                return false
            }
            defer { loadsToFail = max(0, loadsToFail - 1) }
            return loadsToFail > 0
        }
        if fail { throw .credentialsUnavailable("the Keychain is locked (OSStatus -25308)") }
        return try inner.load()
    }

    func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        let fail = mutex.withLock { () -> Bool in
            if savesToPass > 0 {
                savesToPass -= 1
                return false
            }
            defer { savesToFail = max(0, savesToFail - 1) }
            return savesToFail > 0
        }
        if fail { throw .store("disk full") }
        try inner.save(credentials)
    }

    func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
}

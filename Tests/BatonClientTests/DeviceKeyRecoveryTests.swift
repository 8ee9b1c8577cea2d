@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// A device key that cannot be used, reset, or required (issue 29, H3 and M10), against the
/// real server.
@Suite(.ownThreads) struct DeviceKeyRecoveryTests {
    /// A store of the app's own that keeps no device key.
    struct KeylessStore: CredentialStore {
        let inner = MemoryCredentialStore()
        func load() throws(BatonClientError) -> StoredCredentials? { try inner.load() }
        func save(_ credentials: StoredCredentials) throws(BatonClientError) { try inner.save(credentials) }
        func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
    }

    static func session(_ server: ServerProcess, store: any CredentialStore, binding: BatonConfiguration.DeviceBinding) -> BatonSession {
        var configuration = BatonConfiguration(baseURL: server.baseURL, appName: "BatonClientTests/1", requestTimeout: 20, expiryMargin: 0)
        configuration.deviceBinding = binding
        return BatonSession(configuration: configuration, store: store)
    }

    /// M10: `.required` refuses to log in unbound; `.on` falls back to a Bearer login.
    @Test func requiredBindingRefusesAnUnboundLogin() async throws {
        let server = try startServer()
        let required = Self.session(server, store: KeylessStore(), binding: .required)
        let error = await #expect(throws: BatonClientError.self) { try await required.loginAlice() }
        guard case .deviceKey = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(await required.heldBundle == nil)
        let fallback = Self.session(server, store: KeylessStore(), binding: .on)
        try await fallback.loginAlice()
        #expect(await fallback.heldBundle?.tokenType == .bearer)
    }

    /// H3 on the file store: a key file that holds no key used to make every later login
    /// unbound (the login's key creation failed, and `.on` fell back); it is replaced at login.
    @Test func unusableKeyFileIsReplacedAtLogin() async throws {
        let server = try startServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FileCredentialStore(path: directory + "/credentials.json")
        try Data("{\"version\":1,\"d\":\"AAAA\"}".utf8).write(to: URL(fileURLWithPath: directory + "/credentials.json.dpop-key"))
        #expect(throws: BatonClientError.self) { try store.deviceKey(creating: false) }  // unusable is no "missing"
        let session = Self.session(server, store: store, binding: .on)
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        #expect(try await session.get("/v1/verify") == 200)
    }

    /// `resetDeviceKey()`: the bound session ends (its key is gone), the next login binds a new key.
    @Test func resetDeviceKeyEndsTheBoundSessionAndTheNextLoginBindsANewKey() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let session = Self.session(server, store: store, binding: .on)
        let events = EventRecorder(session)
        try await session.loginAlice()
        let first = try #require(try store.deviceKey(creating: false))
        try await session.resetDeviceKey()
        #expect(try store.deviceKey(creating: false) == nil)
        #expect(await eventuallyAsync { events.events.contains(.loginRequired(.deviceKeyLost)) })
        try await session.loginAlice()
        #expect(await session.heldBundle?.tokenType == .dpop)
        #expect(try store.deviceKey(creating: false)?.thumbprint != first.thumbprint)
        #expect(try await session.get("/v1/verify") == 200)
    }

    /// M2: a login holds the store's lock to read the device id and make the key, and to store
    /// the bundle, never across its round trip: another process's exchange does not wait for it.
    /// The server never answers and the login's request timeout (60 s) is far beyond the lock's
    /// own bounded wait (10 s, then a store error): a login that held the lock across its round
    /// trip makes the second `lock()` throw. Taken, the lock is taken while the login is still
    /// in flight (no clock compared: a loaded machine only slows both sides).
    @Test func loginDoesNotHoldTheStoreLockAcrossTheNetwork() async throws {
        let silent = try SilentListener()
        defer { silent.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FileCredentialStore(path: directory + "/credentials.json")
        let session = BatonSession(configuration: BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(silent.port)")!,
                                                                     requestTimeout: 60),
                                   store: store)
        let loginEnded = LoginEnded()
        let login = Task {
            defer { loginEnded.mark() }
            try await session.loginAlice()
        }
        #expect(await eventuallyAsync(within: 10) { silent.acceptedConnections > 0 })  // the login is out, unanswered
        let lock = try await FileCredentialStore(path: directory + "/credentials.json").lock()
        #expect(!loginEnded.value, "the lock was free only once the login had ended")
        lock.unlock()
        login.cancel()
        await #expect(throws: BatonClientError.self) { try await login.value }
    }

    /// Whether the login's task ended, set from that task.
    private final class LoginEnded: @unchecked Sendable {
        private let mutex = NSLock()
        private var ended = false
        var value: Bool { mutex.withLock { ended } }
        func mark() { mutex.withLock { ended = true } }
    }
}

/// Issue 42, F8: the app's session cached the device key and never read it again. After the
/// extension, sharing the store, replaced the key and logged in, the app adopted that login
/// from the store and called its key lost: both processes were logged out. Real server, one
/// file store (the key file beside it) shared by two sessions.
@Suite(.ownThreads) struct ReplacedDeviceKeyTests {
    @Test func aKeyReplacedByAnotherProcessIsReadAgainNotLost() async throws {
        let server = try startServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/credentials.json"
        let app = makeSession(server.baseURL, store: FileCredentialStore(path: path))
        try await app.loginAlice()
        #expect(try await app.get("/v1/verify") == 200)  // the app's key is cached now
        let first = try #require(await app.heldBundle?.keyThumbprint)

        let extensionSession = makeSession(server.baseURL, store: FileCredentialStore(path: path))
        try await extensionSession.resetDeviceKey()
        try await extensionSession.loginAlice()
        let second = try #require(await extensionSession.heldBundle?.keyThumbprint)
        #expect(second != first)

        // The app's own chain ends (an operator, or a server policy on the device's chains):
        // the app is logged out, and its next call adopts the extension's login from the store.
        let appChain = try #require(await app.chainID)
        #expect(try runBaton(["admin", "revoke", "--chain", appChain, "--db", server.databasePath]).0 == 0)
        await #expect(throws: BatonClientError.self) { try await app.get("/v1/verify") }
        #expect(try await app.get("/v1/verify") == 200, "the app called the new chain's key lost")
        guard case .loggedIn = await app.status else { Issue.record("app: \(await app.status)"); return }
        #expect(await app.heldBundle?.keyThumbprint == second)
        #expect(try await extensionSession.get("/v1/verify") == 200, "the extension was logged out too")
    }
}

/// Issue 42, F11: a device key that is there but no longer works (a Secure Enclave key restored
/// onto an erased device) left the session looking logged in while every request failed with
/// `.deviceKey`, and nothing told the app to show the login screen. Now the bound session ends
/// with `loginRequired(.deviceKeyLost)`, as status and event, and the next login makes a new key.
@Suite(.ownThreads) struct UnusableDeviceKeyTests {
    /// A store whose device key, once `breakKey()` is called, exists but cannot be read (as an
    /// unusable Keychain or Secure Enclave key answers), until a login makes a new one.
    final class BreakableKeyStore: CredentialStore, @unchecked Sendable {
        let inner = MemoryCredentialStore()
        private let lock = NSLock()
        private var broken = false
        func breakKey() { lock.withLock { broken = true } }
        func load() throws(BatonClientError) -> StoredCredentials? { try inner.load() }
        func save(_ credentials: StoredCredentials) throws(BatonClientError) { try inner.save(credentials) }
        func lock() async throws(BatonClientError) -> CredentialStoreLock { try await inner.lock() }
        func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
            let isBroken = lock.withLock { broken }
            if isBroken && !creating { throw .deviceKey("the key item exists but its key cannot be used (errSecDecode)") }
            if isBroken {
                try inner.resetDeviceKey()
                lock.withLock { broken = false }
            }
            return try inner.deviceKey(creating: creating)
        }
        func resetDeviceKey() throws(BatonClientError) { try inner.resetDeviceKey() }
    }

    @Test func anUnusableKeyEndsTheBoundSessionVisibly() async throws {
        let server = try startServer()
        let store = BreakableKeyStore()
        let session = makeSession(server.baseURL, store: store)
        let events = EventRecorder(session)
        try await session.loginAlice()
        let first = try #require(await session.heldBundle?.keyThumbprint)
        #expect(try await session.get("/v1/verify") == 200)
        // The app relaunches after a restore: a new session, the same store, the key unusable.
        store.breakKey()
        let relaunched = makeSession(server.baseURL, store: store)
        let relaunchedEvents = EventRecorder(relaunched)
        let error = await #expect(throws: BatonClientError.self) { try await relaunched.get("/v1/verify") }
        #expect(error == .loginRequired(.deviceKeyLost), "\(String(describing: error))")
        #expect(await relaunched.status == .loggedOut(.deviceKeyLost))
        #expect(await eventuallyAsync { relaunchedEvents.events.contains(.loginRequired(.deviceKeyLost)) })
        // The login screen's login makes a new key and works.
        try await relaunched.loginAlice()
        #expect(try await relaunched.get("/v1/verify") == 200)
        #expect(await relaunched.heldBundle?.keyThumbprint != first)
        withExtendedLifetime(events) {}
    }
}

@testable import BatonClient
import Foundation
import Testing

/// The Keychain store's logic (issue 29, H3, H4, M1) against a stand-in Keychain answering with
/// the documented statuses. The Apple-only glue (`SecurityKeychain`, `CryptoKitEnclave`,
/// `KeychainCredentialStore`) is type-checked for iOS by scripts/check-client-ios.
struct KeychainStoreTests {
    static let shared = "TEAM.com.example.shared"
    static let own = "TEAM.com.example.bank"

    static func store(_ keychain: KeychainStandIn, group: String? = nil, lockFile: String? = nil, problem: String? = nil,
                      enclave: any SecureEnclaveKeys = NoSecureEnclave()) -> KeychainStoreCore {
        KeychainStoreCore(key: KeychainItemKey(service: "com.example.bank", account: "baton", accessGroup: group),
                          lockFile: lockFile, lockFileProblem: problem, backend: keychain, enclave: enclave,
                          bundleIdentifier: "com.example.bank")
    }

    static let credentials = StoredCredentials(deviceID: "phone-1", bundle: TokenBundle(token: "bt1_x", expiresAt: Date(), chainID: "c1"))

    // MARK: H3, the device key

    /// An enclave handle that cannot be used now is not "no key": the old code answered nil, and
    /// the session logged the user out as if the key were gone.
    @Test func unusableEnclaveKeyIsAnErrorNotAMissingKey() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let enclave = EnclaveStandIn()
        let store = Self.store(keychain, enclave: enclave)
        let key = try #require(try store.deviceKey(creating: true))
        enclave.makeHandlesUnusable()
        #expect(throws: BatonClientError.self) { try store.deviceKey(creating: false) }
        enclave.makeHandlesUnusable(false)
        #expect(try store.deviceKey(creating: false)?.thumbprint == key.thumbprint)  // it was never gone
    }

    /// At login an unusable item is replaced by a new key, so the login is bound (the old code
    /// kept the unusable item forever: every later login unbound, and with `--dpop required`
    /// no login at all on that device).
    @Test func unusableEnclaveKeyIsReplacedAtLogin() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let enclave = EnclaveStandIn()
        let store = Self.store(keychain, enclave: enclave)
        let old = try #require(try store.deviceKey(creating: true))
        enclave.makeHandlesUnusable()  // the device was erased and restored from a backup
        let stale = keychain.data(service: "com.example.bank", account: "baton.dpop-key", group: Self.own)
        enclave.makeHandlesUnusable(false)
        keychain.put(Data([1, 0x00, 0x01]), service: "com.example.bank", account: "baton.dpop-key", group: Self.own)  // a handle of the erased enclave
        let new = try #require(try store.deviceKey(creating: true))
        #expect(new.thumbprint != old.thumbprint)
        #expect(try store.deviceKey(creating: false)?.thumbprint == new.thumbprint)
        #expect(stale != nil)
    }

    /// A locked Keychain is neither a missing key nor an unusable one: nothing is replaced.
    @Test func lockedKeychainKeepsTheDeviceKey() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain, enclave: EnclaveStandIn())
        let key = try #require(try store.deviceKey(creating: true))
        keychain.failReads(with: KeychainStatus.interactionNotAllowed)
        let error = #expect(throws: BatonClientError.self) { try store.deviceKey(creating: true) }
        guard case .credentialsUnavailable = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(try store.deviceKey(creating: false)?.thumbprint == key.thumbprint)
    }

    /// `resetDeviceKey`: the item is deleted; the next login makes a new key.
    @Test func resetDeletesTheDeviceKey() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain, enclave: EnclaveStandIn())
        let key = try #require(try store.deviceKey(creating: true))
        try store.resetDeviceKey()
        #expect(try store.deviceKey(creating: false) == nil)
        #expect(try store.deviceKey(creating: true)?.thumbprint != key.thumbprint)
    }

    // MARK: H4, sharing and the lock

    /// Without `accessGroup:` the item lands in the first `keychain-access-groups` entry, here
    /// the shared one, where the app's extensions read it too. A process-local lock then lets
    /// app and extension exchange one token twice; the store must refuse without a lock file.
    @Test func itemInASharedDefaultGroupNeedsALockFile() async throws {
        let keychain = KeychainStandIn(accessGroups: [Self.shared, Self.own])
        let store = Self.store(keychain)
        try store.save(Self.credentials)
        #expect(keychain.data(service: "com.example.bank", account: "baton", group: Self.shared) != nil)
        let error = await #expect(throws: BatonClientError.self) { try await store.lock() }
        guard case .store(let message) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(message.contains(Self.shared))
    }

    /// An item in the app's own group needs no lock file.
    @Test func privateItemTakesAProcessLock() async throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain)
        try store.save(Self.credentials)
        try await store.lock().unlock()
    }

    /// A mistyped `appGroup:` (no container) used to make the lock silently process-local.
    @Test func appGroupWithoutAContainerFailsLoudly() async throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain, problem: "the App Group 'group.com.exmaple.bank' has no container in this process")
        let error = await #expect(throws: BatonClientError.self) { try await store.lock() }
        guard case .store(let message) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(message.contains("group.com.exmaple.bank"))
    }

    /// Two store values for one item in one process share one lock (the old lock was per value).
    @Test func storesOfOneItemShareTheProcessLock() async throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let first = Self.store(keychain), second = Self.store(keychain)
        try first.save(Self.credentials)
        let held = try await first.lock()
        let acquired = Flag()
        let waiter = Task { () async throws -> CredentialStoreLock in
            let lock = try await second.lock()
            acquired.set()
            return lock
        }
        try await Task.sleep(for: .milliseconds(200))  // time for the waiter to take it, wrongly
        #expect(!acquired.isSet)
        held.unlock()
        try await waiter.value.unlock()
        #expect(acquired.isSet)
    }

    /// An update that adds `accessGroup:` finds the item in the group the old version used and
    /// moves it (and the device key beside it): the user stays logged in.
    @Test func addingAnAccessGroupMovesTheItems() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own, Self.shared])
        let enclave = EnclaveStandIn()
        let before = Self.store(keychain, enclave: enclave)
        try before.save(Self.credentials)
        let key = try #require(try before.deviceKey(creating: true))
        let after = Self.store(keychain, group: Self.shared, lockFile: "/unused", enclave: enclave)
        #expect(try after.load() == Self.credentials)
        #expect(try after.deviceKey(creating: false)?.thumbprint == key.thumbprint)
        #expect(keychain.data(service: "com.example.bank", account: "baton", group: Self.shared) != nil)
        #expect(keychain.data(service: "com.example.bank", account: "baton", group: Self.own) == nil)
    }

    // MARK: M1

    /// The statuses a prewarmed or early-launched app meets are "unavailable", not "logged out".
    @Test(arguments: [KeychainStatus.interactionNotAllowed, KeychainStatus.notAvailable, KeychainStatus.missingEntitlement])
    func transientStatusesAtLaunchAreUnavailable(status: Int32) throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain)
        try store.save(Self.credentials)
        keychain.failReads(with: status)
        let error = #expect(throws: BatonClientError.self) { try store.load() }
        guard case .credentialsUnavailable = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(try store.load() == Self.credentials)
    }

    /// F13: -34018 that lasts (a build whose provisioning lacks the keychain-access-groups
    /// entitlement) is a configuration error naming the entitlement, not "try later" for ever;
    /// a moment of it at launch (a prewarmed process) stays "unavailable".
    @Test func aLastingMissingEntitlementIsAConfigurationError() throws {
        let keychain = KeychainStandIn(accessGroups: [Self.own])
        let store = Self.store(keychain)
        try store.save(Self.credentials)
        keychain.failReads(with: KeychainStatus.missingEntitlement, KeychainStatus.missingEntitlement, KeychainStatus.missingEntitlement,
                           KeychainStatus.missingEntitlement)
        for _ in 0..<2 {
            let early = #expect(throws: BatonClientError.self) { try store.load() }
            guard case .credentialsUnavailable = early else { Issue.record("got \(String(describing: early))"); return }
        }
        keychain.entitlementClock.advance(by: .seconds(11))
        let lasting = #expect(throws: BatonClientError.self) { try store.load() }
        guard case .store(let why) = lasting, why.contains("-34018"), why.contains("keychain-access-groups") else {
            Issue.record("got \(String(describing: lasting))"); return
        }
        // It stays one while it lasts; a success ends it, and the next -34018 is a moment again.
        let still = #expect(throws: BatonClientError.self) { try store.load() }
        guard case .store = still else { Issue.record("got \(String(describing: still))"); return }
        #expect(try store.load() == Self.credentials)
        keychain.failReads(with: KeychainStatus.missingEntitlement)
        let again = #expect(throws: BatonClientError.self) { try store.load() }
        guard case .credentialsUnavailable = again else { Issue.record("got \(String(describing: again))"); return }
        // A moment long ago (a prewarm) and two at the real launch are not a lasting streak.
        keychain.entitlementClock.advance(by: .seconds(120))
        keychain.failReads(with: KeychainStatus.missingEntitlement, KeychainStatus.missingEntitlement)
        for _ in 0..<2 {
            let launch = #expect(throws: BatonClientError.self) { try store.load() }
            guard case .credentialsUnavailable = launch else { Issue.record("got \(String(describing: launch))"); return }
        }
    }
}


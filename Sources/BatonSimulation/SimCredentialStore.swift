@_spi(Simulation) import BatonClient
import Foundation

/// The device's credential storage, shared by the app and its extension as a Keychain item and
/// a lock file in an App Group are: one value, one device key, one exclusive lock. Each process
/// sees it through a `View` that the world can kill: a dead process's writes never land, its
/// waits never end, and a lock it held is released (the kernel drops a dead process's `flock`).
/// Store calls fail on cue (`FaultMix`), decided by the world's random source in the order the
/// calls come, which the deterministic schedule fixes.
final class SimCredentialStore: @unchecked Sendable {
    private var value: StoredCredentials?
    private var key: DeviceKey?
    private var holder: Int?
    private var waiters: [(view: Int, continuation: UnsafeContinuation<Void, Never>)] = []
    private var dead: Set<Int> = []
    private let world: SimWorld

    init(world: SimWorld) { self.world = world }

    /// What the store holds (the observer's and the thief's view; no fault).
    var contents: StoredCredentials? { value }
    /// The device key, if any (the thief's copy).
    var deviceKey: DeviceKey? { key }

    /// Loses the device key (the Keychain item gone after a restore, say).
    func loseKey() { key = nil }

    /// The view of process `id`.
    func view(for id: Int) -> View { View(store: self, id: id) }

    /// Process `id` died: its lock and its place in the queue go.
    func kill(_ id: Int) {
        dead.insert(id)
        waiters.removeAll { $0.view == id }
        if holder == id { handOn() }
    }

    fileprivate func acquire(_ id: Int) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            if holder == nil {
                holder = id
                continuation.resume()
            } else {
                waiters.append((id, continuation))
            }
        }
    }

    fileprivate func release(_ id: Int) {
        guard holder == id, !dead.contains(id) else { return }
        handOn()
    }

    private func handOn() {
        holder = nil
        guard !waiters.isEmpty else { return }
        let next = waiters.removeFirst()
        holder = next.view
        next.continuation.resume()
    }

    /// One process's view: the `CredentialStore` its `BatonSession` gets.
    struct View: CredentialStore, @unchecked Sendable {
        let store: SimCredentialStore
        let id: Int

        private var isDead: Bool { store.dead.contains(id) }

        func load() throws(BatonClientError) -> StoredCredentials? {
            if !isDead, store.world.fault(store.world.mix.loadFailure, "store.load fails (locked)", process: id) {
                throw .credentialsUnavailable("the Keychain is locked (simulated)")
            }
            return store.value
        }

        func save(_ credentials: StoredCredentials) throws(BatonClientError) {
            guard !isDead else { return }  // a dead process writes nothing
            if store.world.fault(store.world.mix.saveFailure, "store.save fails", process: id) { throw .store("disk full (simulated)") }
            store.value = credentials
            if let token = credentials.bundle?.token { store.world.observed.savedTokens.insert(token) }
            store.world.log("p\(id) store.save \(SimWorld.describe(credentials))")
        }

        func lock() async throws(BatonClientError) -> CredentialStoreLock {
            if isDead { await SimWorld.hangForever() }
            if store.world.fault(store.world.mix.lockFailure, "store.lock fails", process: id) { throw .store("the lock file cannot be opened (simulated)") }
            await store.acquire(id)
            return Handle(store: store, id: id)
        }

        func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
            if store.key == nil, creating, !isDead { store.key = try DeviceKey.generateSoftware().key }
            return store.key
        }

        func resetDeviceKey() throws(BatonClientError) { if !isDead { store.key = nil } }
    }

    private final class Handle: CredentialStoreLock, @unchecked Sendable {
        let store: SimCredentialStore
        let id: Int
        var released = false
        init(store: SimCredentialStore, id: Int) { (self.store, self.id) = (store, id) }
        func unlock() {
            guard !released else { return }
            released = true
            store.release(id)
        }
        deinit { unlock() }
    }
}

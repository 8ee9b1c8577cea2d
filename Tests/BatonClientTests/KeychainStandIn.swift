@_spi(Simulation) @testable import BatonClient
import Foundation

/// A Keychain as Apple documents it, in memory, for the stores' logic on Linux: generic password
/// items keyed by (service, account, access group); the app's access groups in entitlement
/// order (an add without a group goes to the first, a read without one searches them all);
/// `errSecItemNotFound`, `errSecDuplicateItem`, `errSecMissingEntitlement` for a group the app
/// lacks; and any status on cue (`failReads(with:)`: a locked device, a Keychain not available
/// at launch).
final class KeychainStandIn: KeychainBackend, @unchecked Sendable {
    /// -34018's watch, on a clock the test moves (`entitlementClock`).
    let missingEntitlement: MissingEntitlementWatch
    let entitlementClock = ManualContinuousClock()

    private let lock = NSLock()
    private var items: [KeychainItemKey: Data] = [:]
    private var readFailures: [Int32] = []
    /// The app's `keychain-access-groups`, in order (the application identifier group last, as
    /// the system appends it).
    let accessGroups: [String]

    init(accessGroups: [String]) {
        self.accessGroups = accessGroups
        let clock = entitlementClock
        missingEntitlement = MissingEntitlementWatch(now: { clock.now })
    }

    /// The next reads answer these statuses, one each.
    func failReads(with statuses: Int32...) { lock.withLock { readFailures += statuses } }

    /// The data of the item in exactly this group, if any.
    func data(service: String, account: String, group: String) -> Data? {
        lock.withLock { items[KeychainItemKey(service: service, account: account, accessGroup: group)] }
    }

    /// Puts an item in place as an earlier version of the app left it.
    func put(_ data: Data, service: String, account: String, group: String) {
        lock.withLock { items[KeychainItemKey(service: service, account: account, accessGroup: group)] = data }
    }

    private func find(_ key: KeychainItemKey) -> KeychainItemKey? {
        if key.accessGroup != nil { return items[key] != nil ? key : nil }
        return accessGroups.lazy.map { KeychainItemKey(service: key.service, account: key.account, accessGroup: $0) }
            .first { self.items[$0] != nil }
    }

    func read(_ key: KeychainItemKey) -> (status: Int32, data: Data?, accessGroup: String?) {
        lock.withLock {
            if !readFailures.isEmpty { return (readFailures.removeFirst(), nil, nil) }
            if let group = key.accessGroup, !accessGroups.contains(group) { return (KeychainStatus.missingEntitlement, nil, nil) }
            guard let found = find(key) else { return (KeychainStatus.itemNotFound, nil, nil) }
            return (KeychainStatus.success, items[found], found.accessGroup)
        }
    }

    func add(_ key: KeychainItemKey, data: Data) -> Int32 {
        lock.withLock {
            var placed = key
            placed.accessGroup = key.accessGroup ?? accessGroups.first
            guard let group = placed.accessGroup, accessGroups.contains(group) else { return KeychainStatus.missingEntitlement }
            if items[placed] != nil { return KeychainStatus.duplicateItem }
            items[placed] = data
            return KeychainStatus.success
        }
    }

    func update(_ key: KeychainItemKey, data: Data) -> Int32 {
        lock.withLock {
            guard let found = find(key) else { return KeychainStatus.itemNotFound }
            items[found] = data
            return KeychainStatus.success
        }
    }

    func delete(_ key: KeychainItemKey) -> Int32 {
        lock.withLock {
            guard let found = find(key) else { return KeychainStatus.itemNotFound }
            items[found] = nil
            return KeychainStatus.success
        }
    }
}

/// A Secure Enclave stand-in: keys are software keys, their "handles" the scalar behind a
/// marker; `unusable` makes every handle fail to load (a device erased since the handle was
/// made, a backup restored onto it).
final class EnclaveStandIn: SecureEnclaveKeys, @unchecked Sendable {
    private let lock = NSLock()
    private var handlesUnusable = false
    var isAvailable: Bool { true }

    /// From now on no stored handle can be used (or, with false, they can again).
    func makeHandlesUnusable(_ unusable: Bool = true) { lock.withLock { handlesUnusable = unusable } }

    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data) {
        let (key, scalar) = try DeviceKey.generateSoftware()
        return (key, Data([0xEE] + scalar))
    }

    func key(handle: Data) throws(BatonClientError) -> DeviceKey {
        if lock.withLock({ handlesUnusable }) || handle.first != 0xEE {
            throw .deviceKey("the Secure Enclave cannot use the stored key: CryptoKitError.underlyingCoreCryptoError(-26276)")
        }
        return try DeviceKey(scalar: Array(handle.dropFirst()))
    }
}

/// A continuous clock's instants, moved by the test (for `MissingEntitlementWatch`).
final class ManualContinuousClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: Duration = .zero
    private let start = ContinuousClock.now
    var now: ContinuousClock.Instant { lock.withLock { start + offset } }
    func advance(by duration: Duration) { lock.withLock { offset += duration } }
}

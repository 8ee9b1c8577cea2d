import Foundation

/// Which Keychain item: a generic password's service, account and access group (nil: the
/// Keychain's default for this app when adding, any of the app's groups when reading).
struct KeychainItemKey: Hashable, Sendable {
    var service: String
    var account: String
    var accessGroup: String?
}

/// The Keychain result codes the stores act on (OSStatus values from Security's SecBase.h).
enum KeychainStatus {
    static let success: Int32 = 0
    /// `errSecItemNotFound`: no such item.
    static let itemNotFound: Int32 = -25300
    /// `errSecDuplicateItem`: an add met an existing item.
    static let duplicateItem: Int32 = -25299
    /// `errSecInteractionNotAllowed`: the device is locked (before the first unlock since boot;
    /// an app prewarmed or woken in the background).
    static let interactionNotAllowed: Int32 = -25308
    /// `errSecNotAvailable`: no Keychain available yet (seen at launch, before the Keychain
    /// daemon answers).
    static let notAvailable: Int32 = -25291
    /// `errSecMissingEntitlement`: seen at launch from a prewarmed process before its
    /// entitlements are in force (transient), and for an access group the app does not have
    /// (a misconfiguration, once it lasts: `MissingEntitlementWatch`).
    static let missingEntitlement: Int32 = -34018

    /// The statuses a later try can overcome: the item is there, just not readable now (M1).
    static let transient: Set<Int32> = [interactionNotAllowed, notAvailable, missingEntitlement]
}

/// The Keychain calls the stores make, in Swift values: the seam between the stores' logic
/// (which access group an item is in, when a lock file is needed, moving an item to a new
/// group, replacing an unusable device key) and Security's `SecItem*` functions
/// (`SecurityKeychain`, Apple platforms). The logic runs, and is tested, where there is no
/// Keychain, against a stand-in that answers with the documented statuses.
protocol KeychainBackend: Sendable {
    /// `SecItemCopyMatching` for one item's data and the access group it is in.
    func read(_ key: KeychainItemKey) -> (status: Int32, data: Data?, accessGroup: String?)
    /// `SecItemAdd` (accessible after the first unlock, this device only).
    func add(_ key: KeychainItemKey, data: Data) -> Int32
    /// `SecItemUpdate` of the item's data.
    func update(_ key: KeychainItemKey, data: Data) -> Int32
    /// `SecItemDelete`.
    func delete(_ key: KeychainItemKey) -> Int32
    /// How long -34018 has lasted on this Keychain (`MissingEntitlementWatch`).
    var missingEntitlement: MissingEntitlementWatch { get }
}

import Foundation

/// Tells the two faces of Keychain error -34018 (`errSecMissingEntitlement`) apart (issue 42,
/// F13). A prewarmed process meets it for a moment at launch, before its entitlements are in
/// force: that is "unavailable now, not logged out" (M1). A build whose provisioning lacks the
/// `keychain-access-groups` entitlement (typical of a Release or TestFlight build with a
/// different profile) meets it for ever: reported as "unavailable, try later" it left the app
/// stuck without a word. So -34018 counts as transient until it has been answered for
/// `patience` without a success in between, and at least `attempts` times; after that it is a
/// configuration error (`BatonClientError.store`) that names the entitlement.
final class MissingEntitlementWatch: @unchecked Sendable {
    /// How long -34018 may last before it is taken for a misconfiguration.
    static let patience: Duration = .seconds(10)
    /// How many -34018 answers in a row, at least, before that.
    static let attempts = 3

    private let lock = NSLock()
    private var firstSeen: ContinuousClock.Instant?
    private var lastSeen: ContinuousClock.Instant?
    private var count = 0
    /// A gap this long between two -34018 answers starts a new streak: an earlier prewarm's
    /// moment of it plus two at the real launch are not "lasting" (review of F13).
    static let streakGap: Duration = .seconds(60)
    private let now: @Sendable () -> ContinuousClock.Instant

    /// The watch of this process's real Keychain.
    static let process = MissingEntitlementWatch()

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    /// Records a -34018 answer; whether it is a misconfiguration by now.
    func isMisconfigured() -> Bool {
        lock.withLock {
            let now = now()
            if let lastSeen, now - lastSeen > Self.streakGap {
                firstSeen = nil
                count = 0
            }
            lastSeen = now
            if firstSeen == nil { firstSeen = now }
            count += 1
            return count >= Self.attempts && now - firstSeen! >= Self.patience
        }
    }

    /// Any other answer: the entitlement works (or the call never got that far).
    func reset() {
        lock.withLock {
            firstSeen = nil
            lastSeen = nil
            count = 0
        }
    }

    /// The configuration error's message.
    static func message(_ operation: String) -> String {
        "Keychain \(operation) failed with -34018 (errSecMissingEntitlement) for more than \(patience.components.seconds) s: "
            + "the app's build lacks the keychain-access-groups entitlement for this item's access group "
            + "(check the provisioning profile of this build, and KeychainCredentialStore's accessGroup)"
    }
}

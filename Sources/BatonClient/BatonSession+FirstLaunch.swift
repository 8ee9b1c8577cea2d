import Foundation

extension BatonSession {
    /// Forgets a session left by an earlier installation of the app. Keychain items survive an
    /// uninstall, while the app's UserDefaults do not (`suiteName`: nil for `.standard`, or an
    /// App Group's suite for an app and its extensions): on the first launch after an install,
    /// they lack `key`, so the stored session, if any, is logged out (revoked on
    /// the server when it answers) and the store cleared. Call it once at launch, before
    /// `restore()`.
    /// - Returns: whether this was a first launch.
    @discardableResult
    public func resetIfFirstLaunch(suiteName: String? = nil, key: String = "BatonClient.installed") async -> Bool {
        guard !Self.defaults(suiteName).bool(forKey: key) else { return false }
        await logout()
        Self.defaults(suiteName).set(true, forKey: key)
        return true
    }

    private static func defaults(_ suiteName: String?) -> UserDefaults {
        suiteName.flatMap(UserDefaults.init(suiteName:)) ?? .standard
    }
}

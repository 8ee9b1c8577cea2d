import Foundation

extension BatonSession {
    /// Forgets a session left by an earlier installation of the app. Keychain items survive an
    /// uninstall, while the app's UserDefaults do not (`suiteName`: nil for `.standard`, or an
    /// App Group's suite for an app and its extensions): on the first launch after an install,
    /// they lack `key`, so the stored session, if any, is logged out (revoked on
    /// the server when it answers) and the store cleared. Call it once at launch, before
    /// `restore()`.
    /// - Returns: whether this was a first launch.
    ///
    /// Safe in an app extension and before the first unlock (M6): an extension has
    /// UserDefaults of its own, which never hold the app's flag, so there it does nothing unless
    /// `suiteName` names the App Group's suite both share; and before the first unlock since
    /// boot the defaults read as empty while the Keychain is locked, so a store that cannot be
    /// read now decides nothing (call it again at the next launch or unlock).
    @discardableResult
    public func resetIfFirstLaunch(suiteName: String? = nil, key: String = "BatonClient.installed") async -> Bool {
        if suiteName == nil && Self.isAppExtension { return false }
        let defaults = Self.defaults(suiteName)
        guard !defaults.bool(forKey: key) else { return false }
        do { _ = try store.load() } catch .credentialsUnavailable {
            return false
        } catch {}  // unreadable as credentials: nothing to keep
        await logout()
        defaults.set(true, forKey: key)
        return true
    }

    /// Whether this process is an app extension (its bundle is an `.appex`).
    static var isAppExtension: Bool { Bundle.main.bundlePath.hasSuffix(".appex") }

    private static func defaults(_ suiteName: String?) -> UserDefaults {
        suiteName.flatMap(UserDefaults.init(suiteName:)) ?? .standard
    }
}

import Foundation

extension BatonSession {
    /// Forgets a session left by an earlier installation of the app. Keychain items survive an
    /// uninstall; the app's container does not, and the library keeps a marker there
    /// (`InstallationMarker`, at `BatonConfiguration.installationMarker`) whose id stamps
    /// every save. On the first launch after a reinstall the store holds credentials stamped by
    /// an installation while the marker is missing: that session is logged out (revoked on
    /// the server when it answers) and the store cleared. Call it once at launch, before
    /// `restore()`.
    ///
    /// It never logs anybody out otherwise (issue 42, F1):
    /// - credentials without a stamp were saved by a release before the marker: the update
    ///   that adopts this call stamps them and keeps the session;
    /// - a store or marker that cannot be read now (before the first unlock) decides nothing;
    /// - a marker of another id (an extension with a container of its own) decides nothing;
    /// - in an app extension without `.appGroup`, nothing is read or written.
    /// - Returns: whether a session of an earlier installation was logged out.
    @discardableResult
    public func resetIfFirstLaunch() async -> Bool {
        guard installationMarker.file != nil else { return false }
        let stored: StoredCredentials?
        do { stored = try store.load() } catch {
            return false  // unavailable now, or unreadable: the session's own reads deal with it
        }
        guard let stored, stored.bundle != nil else {
            _ = stampingID()
            return false
        }
        guard stored.installation != nil else {
            // Saved by a release before the marker: stamp it now, keep the session.
            if let id = stampingID() {
                var stamped = stored
                stamped.installation = id
                try? store.save(stamped)
            }
            return false
        }
        guard installationMarker.read() == .missing else { return false }
        diagnostics.record(.info, "credentials of an earlier installation; logging out", [:])
        await logout()
        _ = stampingID()
        return true
    }

    /// The pre-marker API: `suiteName` and `key` named the UserDefaults flag that used to
    /// decide, which logged out every user of the update adopting the call (F1). Ignored now:
    /// `resetIfFirstLaunch()`, with the App Group set as `BatonConfiguration.installationMarker`.
    @available(*, deprecated, message: "use resetIfFirstLaunch() and BatonConfiguration.installationMarker = .appGroup(...)")
    @discardableResult
    public func resetIfFirstLaunch(suiteName: String?, key: String = "BatonClient.installed") async -> Bool {
        await resetIfFirstLaunch()
    }

    /// Saves `credentials` stamped with this installation's marker id (none when there is no
    /// marker, or it cannot be made now: such credentials decide nothing at a first launch).
    func persist(_ credentials: StoredCredentials) throws(BatonClientError) {
        var stamped = credentials
        stamped.installation = stampingID()
        try store.save(stamped)
    }

    /// The marker's id, read or made once per session.
    func stampingID() -> String? {
        if let installationID { return installationID }
        installationID = installationMarker.ensure()
        return installationID
    }

    /// Whether this process is an app extension (its bundle is an `.appex`).
    static var isAppExtension: Bool { Bundle.main.bundlePath.hasSuffix(".appex") }
}

import Foundation

extension BatonSession {
    /// Forgets a session left by an earlier installation of the app. Keychain items survive an
    /// uninstall; the app's container does not, and the library keeps a marker there
    /// (`InstallationMarker`, at `BatonConfiguration.installationMarker`), made by this call,
    /// whose id and location stamp every save once it exists. On the first launch after a
    /// reinstall the store holds credentials stamped by this marker's location while the
    /// marker is missing: that session is logged out (revoked on the server when it answers)
    /// and the store cleared. Call it once at launch, before `restore()`.
    ///
    /// It never logs anybody out otherwise (issue 42, F1):
    /// - credentials without a stamp were saved by a release before the marker: the update
    ///   that adopts this call stamps them and keeps the session;
    /// - credentials stamped by another location (the app moved its marker to an App Group,
    ///   another app of the team shares the item) decide nothing;
    /// - a store or marker that cannot be read now (before the first unlock) decides nothing;
    /// - a save made before this call keeps the stamp it found (the evidence of a reinstall is
    ///   never erased by an early `restore(exchangeNow:)`);
    /// - in an app extension without `.appGroup`, nothing is read or written.
    /// - Returns: whether a session of an earlier installation was logged out.
    @discardableResult
    public func resetIfFirstLaunch() async -> Bool {
        guard let location = installationMarker.location else { return false }
        let marker = installationMarker.read()
        guard marker != .unreadable else { return false }
        enum Decision { case keep, reinstall }
        let decision: Decision
        do {
            // Decided and stamped under the store's lock, so no other process's save is undone.
            decision = try await withStoreLock { () throws(BatonClientError) -> Decision in
                let stored = try store.load()
                if let stored, stored.bundle != nil, marker == .missing,
                   InstallationMarker.Stamp(stored.installation)?.location == location {
                    return .reinstall
                }
                guard let id = installationMarker.ensure() else { return .keep }
                let stamp = InstallationMarker.Stamp(id: id, location: location)
                installationStamp = stamp.text
                if var stored, stored.installation != stamp.text {
                    stored.installation = stamp.text
                    try store.save(stored)
                }
                return .keep
            }
        } catch {
            return false  // unavailable now, or unreadable: the session's own reads deal with it
        }
        guard decision == .reinstall else { return false }
        diagnostics.record(.info, "credentials of an earlier installation; logging out", ["location": location])
        await logout()
        if let id = installationMarker.ensure() { installationStamp = InstallationMarker.Stamp(id: id, location: location).text }
        // The store's lock may have failed in logout: then the old session is still there.
        let left = (try? store.load()) ?? nil
        return left?.bundle == nil
    }

    /// The pre-marker API: `suiteName` and `key` named the UserDefaults flag that used to
    /// decide, which logged out every user of the update adopting the call (F1). Ignored now:
    /// `resetIfFirstLaunch()`, with the App Group set as `BatonConfiguration.installationMarker`
    /// (moving the marker logs nobody out: a stamp from another location decides nothing).
    @available(*, deprecated, message: "use resetIfFirstLaunch() and BatonConfiguration.installationMarker = .appGroup(...)")
    @discardableResult
    public func resetIfFirstLaunch(suiteName: String?, key: String = "BatonClient.installed") async -> Bool {
        await resetIfFirstLaunch()
    }

    /// Saves `credentials` stamped with this installation's marker once it exists; before (no
    /// marker yet, or none in this process) with the stamp the store holds, kept as it is: a
    /// save must never erase the evidence of a reinstall (review of F1, M2 and M3).
    func persist(_ credentials: StoredCredentials) throws(BatonClientError) {
        var stamped = credentials
        stamped.installation = stampingID() ?? credentials.installation ?? store.lastSeenStamp
        try store.save(stamped)
    }

    /// The stamp of this installation's marker, once it exists (made by `resetIfFirstLaunch`).
    func stampingID() -> String? {
        if let installationStamp { return installationStamp }
        installationStamp = installationMarker.currentStamp()?.text
        return installationStamp
    }

    /// Whether this process is an app extension (its bundle is an `.appex`).
    static var isAppExtension: Bool { Bundle.main.bundlePath.hasSuffix(".appex") }
}

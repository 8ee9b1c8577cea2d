import Foundation

/// The device key (RFC 9449 DPoP) as the session uses it: made at the first login, read from
/// the store once, and required for every request of a bound chain.
extension BatonSession {
    /// The key a login should prove, made now if the store has none (the caller holds the
    /// store's lock; an unusable stored key is replaced then); nil when binding is off or the
    /// store keeps no key. With `.on`, a key that cannot be made now (a Keychain failure)
    /// makes an unbound login rather than none; with `.required`, the login fails.
    /// - Throws: `.deviceKey` (or the store's error) with `.required` only.
    func loginKey() throws(BatonClientError) -> DeviceKey? {
        switch configuration.deviceBinding {
        case .off: return nil
        case .on, .required: break
        }
        // Read from the store every time (under its lock, so cheap and current): another
        // process sharing the store may have replaced the key since this session cached it.
        let key: DeviceKey?
        do { key = try store.deviceKey(creating: true) } catch {
            if configuration.deviceBinding == .required { throw error }
            diagnostics.record(.notice, "device key unavailable; this login is unbound (Bearer)", ["error": error.diagnosticText])
            key = nil
        }
        if key == nil, configuration.deviceBinding == .required {
            throw .deviceKey("deviceBinding is .required and the store keeps no device key (CredentialStore.deviceKey(creating:))")
        }
        cachedDeviceKey = key
        return key
    }

    /// Forgets the device key (DPoP): the store deletes it, and the next login makes a new one.
    /// For a key the store reports unusable (`BatonClientError.deviceKey` at each request of a
    /// bound session, e.g. after a backup was restored onto an erased device; a login already
    /// replaces such a key by itself). A session bound to the key cannot go on without it: it
    /// ends with `loginRequired(.deviceKeyLost)`. An unbound session is untouched.
    /// - Throws: what the store's lock or deletion throws; nothing is changed then.
    public func resetDeviceKey() async throws(BatonClientError) {
        try? restoreIfNeeded()
        let lock = try await store.lock()
        do { try store.resetDeviceKey() } catch {
            lock.unlock()
            throw error
        }
        lock.unlock()
        cachedDeviceKey = nil
        if let bundle = heldBundle, bundle.tokenType == .dpop {
            _ = try? await self.bundle(for: .rejected(token: bundle.token, .loginRequired(.deviceKeyLost)))
        }
    }

    /// The key that proves `bundle`'s requests: nil for a Bearer bundle.
    /// - Throws: `.loginRequired(.deviceKeyLost)` when the bundle is bound but the key is gone
    ///   or is another key than the one bound (the state is logged out and the store cleared by
    ///   then); `.credentialsUnavailable` or `.deviceKey` when it cannot be read now (nothing
    ///   changes: a locked Keychain is not a lost key).
    func proofKey(for bundle: TokenBundle) async throws(BatonClientError) -> DeviceKey? {
        guard bundle.tokenType == .dpop else { return nil }
        if let key = try deviceKeyIfHeld(for: bundle) { return key }
        _ = try await self.bundle(for: .rejected(token: bundle.token, .loginRequired(.deviceKeyLost)))
        throw .loginRequired(.deviceKeyLost)  // not reached: the rules fail with that reason
    }

    /// Ends the session of a bound `bundle` whose device key is there but cannot be used (read
    /// or sign: a Secure Enclave key restored onto an erased device, a damaged key file): the
    /// chain cannot be used without it, so the session ends with `loginRequired(.deviceKeyLost)`,
    /// published as the status and the event the login screen waits for, and the next login
    /// makes a new key (issue 42, F11: the session looked logged in while every request failed
    /// with `.deviceKey`). A key that cannot be read *now* (`.credentialsUnavailable`) is not this.
    func endForUnusableKey(of bundle: TokenBundle, _ why: String) async throws(BatonClientError) -> Never {
        diagnostics.record(.error, "device key unusable; the bound session ends (log in again: a new key is made)",
                           ["chain": bundle.chainID, "error": why])
        _ = try? await self.bundle(for: .rejected(token: bundle.token, .loginRequired(.deviceKeyLost)))
        throw .loginRequired(.deviceKeyLost)
    }

    /// The device key if it is the one `bundle` was bound with; nil when it is gone or another.
    /// A cached key that is not the bundle's is read again from the store first (F8: another
    /// process sharing the store, an extension, replaced the key and logged in; the session
    /// adopted that login and used to call its key lost, logging both processes out).
    func deviceKeyIfHeld(for bundle: TokenBundle) throws(BatonClientError) -> DeviceKey? {
        func binds(_ key: DeviceKey) -> Bool { bundle.keyThumbprint == nil || bundle.keyThumbprint == key.thumbprint }
        if let cachedDeviceKey, binds(cachedDeviceKey) { return cachedDeviceKey }
        let key = try store.deviceKey(creating: false)
        cachedDeviceKey = key
        guard let key, binds(key) else { return nil }
        return key
    }

    /// Whether the device key is really gone from the store (after a refused proof: the cached
    /// key may outlive a deleted file or Keychain item). A key that cannot be read now is not gone.
    func deviceKeyIsGone(for bundle: TokenBundle) -> Bool {
        guard bundle.tokenType == .dpop else { return false }
        let stored: DeviceKey?
        do { stored = try store.deviceKey(creating: false) } catch { return false }
        guard let stored else {
            cachedDeviceKey = nil
            return true
        }
        return bundle.keyThumbprint.map { $0 != stored.thumbprint } ?? false
    }
}

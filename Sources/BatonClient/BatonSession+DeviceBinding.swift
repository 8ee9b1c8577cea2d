import Foundation

/// The device key (RFC 9449 DPoP) as the session uses it: made at the first login, read from
/// the store once, and required for every request of a bound chain.
extension BatonSession {
    /// The key a login should prove, made now if the store has none (the caller holds the
    /// store's lock); nil when binding is off or the store keeps no key. A key that cannot be
    /// made now (a Keychain failure) makes an unbound login rather than none.
    func loginKey() -> DeviceKey? {
        guard configuration.deviceBinding == .on else { return nil }
        if let cachedDeviceKey { return cachedDeviceKey }
        let key = (try? store.deviceKey(creating: true)) ?? nil
        cachedDeviceKey = key
        return key
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

    /// The device key if it is the one `bundle` was bound with; nil when it is gone or another.
    func deviceKeyIfHeld(for bundle: TokenBundle) throws(BatonClientError) -> DeviceKey? {
        let key: DeviceKey?
        if let cachedDeviceKey { key = cachedDeviceKey } else { key = try store.deviceKey(creating: false) }
        cachedDeviceKey = key
        guard let key, bundle.keyThumbprint == nil || bundle.keyThumbprint == key.thumbprint else { return nil }
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

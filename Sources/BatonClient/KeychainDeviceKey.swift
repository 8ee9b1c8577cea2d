import Foundation

/// The device key of a `KeychainCredentialStore`: a generic password item beside the
/// credentials' (same service, account `<account>.dpop-key`, same access group, so an app and
/// its extensions share it), readable after the first unlock, never migrated to another device.
///
/// Where the device has a Secure Enclave, the key is made there and the item holds its opaque
/// handle (useless on any other device); else (the simulator) a software key's raw scalar.
/// The item's first byte says which (1 enclave, 2 software).
///
/// Created once: adding a second key meets the first's item (`errSecDuplicateItem`), and the
/// loser reads the winner's. Mirrors `DeviceKeyFile` (Linux).
struct KeychainDeviceKey: Sendable {
    /// The item holding the key.
    let item: KeychainItem
    /// The enclave that makes and uses enclave keys.
    let enclave: any SecureEnclaveKeys

    /// The key, created first when missing and `creating`. An item that is there but holds no
    /// usable key (an enclave handle from before the device was erased, an unknown form) is
    /// replaced when `creating` (login, under the store's lock: H3), and an error otherwise:
    /// only a missing item is "no key".
    /// - Throws: `.credentialsUnavailable` while the Keychain cannot be read now (never
    ///   replaced then), `.store` for another Keychain failure, `.deviceKey` when the key cannot
    ///   be made, or the stored one cannot be used and `creating` is false.
    func load(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        switch try readKey() {
        case .key(let key): return key
        case .missing:
            guard creating else { return nil }
            return try makeKey()
        case .unusable(let why):
            guard creating else { throw .deviceKey(why) }
            try item.delete()
            return try makeKey()
        }
    }

    /// Deletes the key (`BatonSession.resetDeviceKey()`).
    func delete() throws(BatonClientError) { try item.delete() }

    /// A new key, added unless another process added one first (then that one).
    private func makeKey() throws(BatonClientError) -> DeviceKey {
        let key: DeviceKey
        var stored: [UInt8]
        if enclave.isAvailable {
            let (enclaveKey, handle) = try enclave.make()
            key = enclaveKey
            stored = [1] + Array(handle)
        } else {
            let (software, scalar) = try DeviceKey.generateSoftware()
            key = software
            stored = [2] + scalar
        }
        defer { stored.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        // Another process added its key first: that one is the device's key.
        guard try item.add(Data(stored), replacing: false) else {
            guard case .key(let winner) = try readKey() else { throw .deviceKey("the device key another process stored cannot be used") }
            return winner
        }
        return key
    }

    /// What the item holds.
    private enum Stored {
        case missing
        case key(DeviceKey)
        /// There, but no key this device can use (why).
        case unusable(String)
    }

    /// The stored key, or why there is none.
    private func readKey() throws(BatonClientError) -> Stored {
        guard let data = try item.read() else { return .missing }
        switch data.first {
        case 1:
            do { return .key(try enclave.key(handle: data.dropFirst())) } catch { return .unusable("\(error)") }
        case 2:
            do { return .key(try DeviceKey(scalar: Array(data.dropFirst()))) } catch { return .unusable("\(error)") }
        default:
            return .unusable("the Keychain's device key item has an unknown form")
        }
    }
}

import Foundation

// The device key for a `CredentialStore` of the app's own (M4): the store makes the key once,
// keeps what it is given to keep, and hands the session the key rebuilt from it; the
// library's stores do exactly this (`DeviceKeyFile`, `KeychainDeviceKey`).

extension DeviceKey {
    /// A new software P-256 key and its private scalar (32 bytes), which your store keeps as
    /// secretly as the credentials (the Keychain, this device only) and hands back to
    /// `init(privateScalar:)`.
    /// - Throws: `.deviceKey` when no key can be made.
    public static func makeSoftwareKey() throws(BatonClientError) -> (key: DeviceKey, privateScalar: [UInt8]) {
        let (key, scalar) = try generateSoftware()
        return (key, scalar)
    }

    /// The software key whose private scalar `makeSoftwareKey()` gave.
    /// - Throws: `.deviceKey` when `privateScalar` is not a P-256 scalar.
    public init(privateScalar: [UInt8]) throws(BatonClientError) {
        try self.init(scalar: privateScalar)
    }

    #if canImport(CryptoKit)
    /// A new key in this device's Secure Enclave and its handle (opaque; only this device's
    /// enclave can use it), which your store keeps and hands back to `init(secureEnclaveHandle:)`.
    /// - Throws: `.deviceKey` when there is no enclave or it cannot make a key.
    public static func makeSecureEnclaveKey() throws(BatonClientError) -> (key: DeviceKey, handle: Data) {
        let enclave = CryptoKitEnclave()
        guard enclave.isAvailable else { throw .deviceKey("this device has no Secure Enclave") }
        return try enclave.make()
    }

    /// The enclave key of `handle`.
    /// - Throws: `.deviceKey` when this device's enclave cannot use it (another device's, or
    ///   from before the device was erased): replace it with a new key at the next login.
    public init(secureEnclaveHandle handle: Data) throws(BatonClientError) {
        self = try CryptoKitEnclave().key(handle: handle)
    }
    #endif
}

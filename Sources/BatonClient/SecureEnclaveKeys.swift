import Foundation

/// Device keys in a Secure Enclave: the seam between `KeychainDeviceKey`'s logic and CryptoKit
/// (`CryptoKitEnclave`, Apple platforms), so that the logic runs where there is no enclave.
/// An enclave key leaves the enclave only as an opaque handle that this device's enclave
/// alone can turn back into a key.
protocol SecureEnclaveKeys: Sendable {
    /// Whether this device has an enclave (not the simulator, not a Mac without one).
    var isAvailable: Bool { get }
    /// A new key in the enclave and its handle.
    /// - Throws: `.deviceKey` when the enclave cannot make one.
    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data)
    /// The key of `handle`.
    /// - Throws: `.deviceKey` when the enclave cannot use it now, or ever (a handle from before
    ///   the device was erased, restored from a backup).
    func key(handle: Data) throws(BatonClientError) -> DeviceKey
}

/// No enclave (Linux, and as the stand-in's base where a test needs none).
struct NoSecureEnclave: SecureEnclaveKeys {
    var isAvailable: Bool { false }
    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data) { throw .deviceKey("no Secure Enclave") }
    func key(handle: Data) throws(BatonClientError) -> DeviceKey { throw .deviceKey("no Secure Enclave") }
}

/// Whether the Secure Enclave asks the user before the device key signs (the key's own access
/// control, enforced by the enclave: issue 42's biometric gate at the hardware level).
public enum DeviceKeyProtection: Sendable, Equatable {
    /// The key signs whenever the app asks (the default: background exchanges work while the
    /// phone is locked).
    case none
    /// Face ID or Touch ID of the currently enrolled fingers or face
    /// (`.biometryCurrentSet | .privateKeyUsage`); one confirmation covers the signatures of
    /// `reuseFor` (`LAContext.touchIDAuthenticationAllowableReuseDuration`, at most 5 minutes).
    /// A new enrollment invalidates the key: the next login makes a new one. Every request of
    /// a bound chain signs, background exchanges included: those fail while nobody confirms
    /// (`BatonClientError.userAuthentication`, never a logout).
    case biometry(reuseFor: Duration)
}

#if canImport(CryptoKit)
import CryptoKit
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

/// CryptoKit's `SecureEnclave.P256.Signing`, with the key's access control of `protection`.
struct CryptoKitEnclave: SecureEnclaveKeys {
    var isAvailable: Bool { SecureEnclave.isAvailable }
    var protection: DeviceKeyProtection = .none

    func make() throws(BatonClientError) -> (key: DeviceKey, handle: Data) {
        do {
            let key: SecureEnclave.P256.Signing.PrivateKey
            #if canImport(LocalAuthentication)
            if case .biometry = protection {
                var error: Unmanaged<CFError>?
                guard let access = SecAccessControlCreateWithFlags(kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                                                                   [.privateKeyUsage, .biometryCurrentSet], &error) else {
                    throw BatonClientError.deviceKey("the key's access control could not be made: \(String(describing: error?.takeRetainedValue()))")
                }
                key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: access, authenticationContext: Self.context(protection))
            } else {
                key = try SecureEnclave.P256.Signing.PrivateKey()
            }
            #else
            key = try SecureEnclave.P256.Signing.PrivateKey()
            #endif
            return (DeviceKey(secureEnclave: key), key.dataRepresentation)
        } catch let error as BatonClientError {
            throw error
        } catch {
            throw .deviceKey("the Secure Enclave could not make a key: \(error)")
        }
    }

    func key(handle: Data) throws(BatonClientError) -> DeviceKey {
        do {
            #if canImport(LocalAuthentication)
            if case .biometry = protection {
                return DeviceKey(secureEnclave: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle,
                                                                                          authenticationContext: Self.context(protection)))
            }
            #endif
            return DeviceKey(secureEnclave: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle))
        } catch {
            throw .deviceKey("the Secure Enclave cannot use the stored key: \(error)")
        }
    }

    #if canImport(LocalAuthentication)
    /// One authentication context for the process, so one confirmation covers `reuseFor`.
    private static let shared = SharedContext()

    private final class SharedContext: @unchecked Sendable {
        let lock = NSLock()
        var context: LAContext?
    }

    static func context(_ protection: DeviceKeyProtection) -> LAContext? {
        guard case .biometry(let reuse) = protection else { return nil }
        return shared.lock.withLock {
            if let context = shared.context { return context }
            let context = LAContext()
            context.touchIDAuthenticationAllowableReuseDuration = min(Double(reuse.components.seconds), LATouchIDAuthenticationMaximumAllowableReuseDuration)
            shared.context = context
            return context
        }
    }
    #endif
}
#endif

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Logging in through the bank's identity provider (RFC 8693 token exchange at
/// `/v1/token-exchange`, docs/identity.md): the app gets an ID token (Sign in with Apple, an
/// OIDC SDK such as AppAuth) or its backend's signed assertion, and exchanges it for a Baton
/// session bound to this device's key. From then on the session is exactly a password login's:
/// the same exchanges, reuse detection, device binding, "your devices" and sign-out.
extension BatonSession {
    /// The `nonce` to give the identity provider for the ID token this device will exchange:
    /// base64url(SHA-256(the device key's thumbprint)). The server accepts an ID token only with
    /// the nonce of the key whose proof comes with it, so a token intercepted on its way is
    /// worthless elsewhere. Makes the device key now if the store has none.
    /// - Throws: `.deviceKey` when device binding is off or no key can be made.
    public func identityNonce() async throws -> String {
        try? restoreIfNeeded()
        let key = try await withStoreLock { () throws(BatonClientError) in try loginKey() }
        guard let key else { throw Self.keyRequired }
        return Self.identityNonce(forThumbprint: key.thumbprint)
    }

    /// The nonce for the key whose RFC 7638 thumbprint is `thumbprint` (the server's rule).
    public static func identityNonce(forThumbprint thumbprint: String) -> String {
        Base64URL.encode(SHA256Digest.of(Array(thumbprint.utf8)))
    }

    /// Logs in with an OpenID Connect ID token whose `nonce` is `identityNonce()`.
    /// - Throws: `BatonClientError.http` with `invalid_grant` (the token was refused: its
    ///   `error_description` names the rule), `account_disabled`, `dpop_required`...;
    ///   `.deviceKey` without a device key; `.transport`; `.store`.
    public func login(idToken: String, deviceClass: DeviceClass = .mobile, deviceName: String? = nil) async throws {
        try await exchangeSubjectToken(idToken, type: "urn:ietf:params:oauth:token-type:id_token", deviceClass: deviceClass, deviceName: deviceName)
    }

    /// Logs in with the bank backend's signed assertion (RFC 7523), whose `cnf.jkt` is this
    /// device key's thumbprint (`deviceKeyThumbprint()`) and whose `jti` is new.
    public func login(assertion: String, deviceClass: DeviceClass = .mobile, deviceName: String? = nil) async throws {
        try await exchangeSubjectToken(assertion, type: "urn:ietf:params:oauth:token-type:jwt", deviceClass: deviceClass, deviceName: deviceName)
    }

    /// The thumbprint of this device's key, for the backend's assertion (`cnf.jkt`). Makes
    /// the key now if the store has none.
    public func deviceKeyThumbprint() async throws -> String {
        try? restoreIfNeeded()
        let key = try await withStoreLock { () throws(BatonClientError) in try loginKey() }
        guard let key else { throw Self.keyRequired }
        return key.thumbprint
    }

    private static var keyRequired: BatonClientError {
        .deviceKey("a login through an identity provider binds the session to the device key; deviceBinding is off or the store keeps no key")
    }

    private func exchangeSubjectToken(_ token: String, type: String, deviceClass: DeviceClass, deviceName: String?) async throws {
        try? restoreIfNeeded()
        let (deviceID, key) = try await loginDevice()
        guard let key else { throw Self.keyRequired }
        var form = [("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"), ("subject_token", token),
                    ("subject_token_type", type), ("device_id", deviceID), ("device_class", deviceClass.rawValue)]
        if let deviceName { form.append(("device_name", deviceName)) }
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/token-exchange"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(form.map { Self.formEncode($0.0) + "=" + Self.formEncode($0.1) }.joined(separator: "&").utf8)
        try await completeLogin(request, deviceID: deviceID, key: key)
    }

    /// application/x-www-form-urlencoded: unreserved characters as they are, every other byte
    /// percent-encoded (a JWT is unreserved characters and dots; a device name may be anything).
    static func formEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded
            }
        }
        return out
    }
}

private extension String {
    var leftPadded: String { count == 1 ? "0" + self : self }
}

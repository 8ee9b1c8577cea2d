import Foundation

/// The device's P-256 key that proves possession of a bound chain's tokens (RFC 9449 DPoP):
/// made once per installation and kept across logins (the key is the device). Its private half
/// never leaves the device: in the Secure Enclave where there is one, else a software key in
/// the Keychain (Apple) or in a file beside the credentials (Linux, `FileCredentialStore`).
///
/// A `DeviceKey` holds the public point and a way to sign; it is what a `CredentialStore`
/// hands the session (`deviceKey(creating:)`).
public struct DeviceKey: Sendable {
    /// The public point, 32 bytes each, big-endian.
    let x: [UInt8]
    let y: [UInt8]
    /// Signs with the private key: the raw ES256 signature r ‖ s (64 bytes) of SHA-256(message).
    private let signer: @Sendable ([UInt8]) throws(BatonClientError) -> [UInt8]

    /// A key from its public point and its signing function. `package`: a deterministic
    /// simulation's store makes keys whose signatures do not depend on a random nonce.
    @_spi(Simulation) public init(x: [UInt8], y: [UInt8], signer: @escaping @Sendable ([UInt8]) throws(BatonClientError) -> [UInt8]) {
        self.x = x
        self.y = y
        self.signer = signer
    }

    /// The ES256 signature (r ‖ s, 64 bytes) of `message`.
    /// - Throws: `.deviceKey` when the key refuses (Secure Enclave failure).
    func sign(_ message: [UInt8]) throws(BatonClientError) -> [UInt8] {
        let signature = try signer(message)
        guard signature.count == 64 else { throw .deviceKey("the key gave a \(signature.count)-byte signature, not 64") }
        return signature
    }

    /// The public key as a JWK (RFC 7518 §6.2.1), members in RFC 7638's order, no whitespace.
    var publicJWK: String {
        "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(x))\",\"y\":\"\(Base64URL.encode(y))\"}"
    }

    /// The RFC 7638 thumbprint (`jkt`) a server binds a chain to: base64url(SHA-256(the JWK
    /// with only crv, kty, x, y, in that order)), which is exactly `publicJWK`.
    public var thumbprint: String { Base64URL.encode(SHA256Digest.of(Array(publicJWK.utf8))) }
}

/// Base64url without padding (RFC 7515 §2), as JOSE writes every binary value.
enum Base64URL {
    /// The unpadded base64url form of `bytes`.
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let base64 = Data(bytes).base64EncodedData()
        var url = [UInt8]()
        url.reserveCapacity(base64.count)
        for byte in base64 {
            switch byte {
            case UInt8(ascii: "+"): url.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): url.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: url.append(byte)
            }
        }
        return String(decoding: url, as: UTF8.self)
    }

    /// The bytes of an unpadded base64url string; nil when it is not one.
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = [UInt8]()
        base64.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "/"): return nil
            default: base64.append(byte)
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(base64)).map(Array.init)
    }
}

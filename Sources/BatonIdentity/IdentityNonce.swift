import BatonCore

/// The `nonce` an app passes to its identity provider so that the ID token it gets back can be
/// exchanged only with its own device key: base64url(SHA-256(the key's RFC 7638 thumbprint)),
/// 43 characters. An ID token intercepted on its way (a malicious SDK, a logged redirect) is
/// worthless without the private key whose proof accompanies the exchange; a token is also
/// accepted once only, and only while its `iat` is recent. BatonClient's
/// `BatonSession.identityNonce()` computes the same value (docs/identity.md).
package enum IdentityNonce {
    /// The nonce for the device key whose thumbprint (base64url text) is `jkt`.
    package static func value(forThumbprint jkt: String) -> String {
        Base64URL.encode(Digest.sha256(Array(jkt.utf8)))
    }
}

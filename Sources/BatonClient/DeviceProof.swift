import Foundation

/// DPoP proofs (RFC 9449 §4.2) made with the device key: a compact JWS (ES256), header
/// `{"typ":"dpop+jwt","alg":"ES256","jwk":{…}}`, claims `jti` (random, 128 bits), `htm`,
/// `htu` (the URL without query and fragment), `iat`, `ath` when a token is presented, and the
/// server's `nonce` when one is known. A fresh proof for every request.
@_spi(Simulation) public enum DeviceProof {
    /// A proof for `method` to `url`, presenting `token` (nil: none), at `now`, its `jti` from
    /// `randomBytes` (the session's `ClientEnvironment.randomBytes`).
    /// - Throws: `.deviceKey` when the key cannot sign.
    @_spi(Simulation) public static func make(key: DeviceKey, method: String, url: URL, token: String?, nonce: String?, now: Date,
                     randomBytes: (Int) -> [UInt8] = secureRandomBytes) throws(BatonClientError) -> String {
        let header = "{\"alg\":\"ES256\",\"jwk\":\(key.publicJWK),\"typ\":\"dpop+jwt\"}"
        var claims: [String: Any] = [
            "jti": Base64URL.encode(randomBytes(16)),
            "htm": method,
            "htu": targetURI(url),
            "iat": Int(now.timeIntervalSince1970.rounded(.down)),
        ]
        if let token { claims["ath"] = Base64URL.encode(SHA256Digest.of(Array(token.utf8))) }
        if let nonce { claims["nonce"] = nonce }
        let payload = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    /// `htu`: the request URL without its query and fragment (RFC 9449 §4.2).
    static func targetURI(_ url: URL) -> String {
        let text = url.absoluteString
        return String(text.prefix { $0 != "?" && $0 != "#" })
    }
}

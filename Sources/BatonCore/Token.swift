/// The secret key that authenticates token bodies (HMAC-SHA-256). 32 random bytes, kept in
/// a 0600 file beside the database (see BatonStore's `KeyFile`).
package struct TokenKey: Sendable {
    /// The raw key bytes.
    package let bytes: [UInt8]

    /// Wraps an existing key; nil unless it is exactly 32 bytes.
    package init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// A new key from the system CSPRNG (drawn again in the practically impossible case that
    /// it does not look random, so a key Baton writes is never one it would refuse to read).
    package static func generate() -> TokenKey {
        while true {
            let key = TokenKey(bytes: SecureRandom.bytes(32))!
            if key.looksRandom { return key }
        }
    }
}

/// The SHA-256 of a token's text: the only form in which a token is ever stored.
package struct TokenHash: Hashable, Sendable {
    /// 32 bytes.
    package let bytes: [UInt8]

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// Hashes a token's text.
    package init(of token: String) { bytes = Digest.sha256(Array(token.utf8)) }

    /// Compares in constant time (a hash of a live token is a secret's stand-in).
    package func matches(_ other: [UInt8]) -> Bool { Digest.constantTimeEquals(bytes, other) }
}

/// A token that Baton issued: its text (handed to the client once, then forgotten) and
/// what is stored of it.
package struct IssuedToken: Sendable {
    /// `bt1_…`: what the client presents as `Authorization: Bearer`.
    package let text: String
    /// What the database keeps.
    package let hash: TokenHash
    /// The chain it belongs to.
    package let chainID: ChainID
    /// Its place in the chain (0 for the login's token).
    package let generation: Int
}

/// A presented token whose MAC checked out: its claims are ours, not the client's.
package struct PresentedToken: Sendable {
    package let chainID: ChainID
    package let generation: Int
    package let hash: TokenHash
}

/// Issues and authenticates tokens.
///
/// Format: `bt1_` + base64url(chain id: 8 bytes BE ‖ generation: 4 bytes BE ‖ secret: 32
/// bytes ‖ mac: 16 bytes), 84 characters. The secret is 256 bits from getrandom; the mac is
/// HMAC-SHA-256(key, "bt1" ‖ the first 44 bytes) truncated to 128 bits (RFC 2104 §5
/// allows truncation to half the output). A forged or altered token is rejected here,
/// before any database read.
package struct TokenCodec: Sendable {
    /// Characters every token starts with; the digit is the format version.
    package static let prefix = "bt1_"
    /// Length of every token's text.
    package static let length = 84

    private static let bodyLength = 44
    private static let macLength = 16
    private let key: HMACKey

    package init(key: TokenKey) { self.key = HMACKey(key.bytes) }

    /// A new token for `generation` of `chainID`.
    package func issue(chainID: ChainID, generation: Int) -> IssuedToken {
        precondition(generation >= 0 && generation <= Int(UInt32.max), "generation out of range")
        var body = [UInt8]()
        body.reserveCapacity(Self.bodyLength + Self.macLength)
        withUnsafeBytes(of: UInt64(bitPattern: chainID.rawValue).bigEndian) { body += $0 }
        withUnsafeBytes(of: UInt32(generation).bigEndian) { body += $0 }
        body += SecureRandom.bytes(32)
        body += mac(body)
        let text = Self.prefix + Base64URL.encode(body)
        return IssuedToken(text: text, hash: TokenHash(of: text), chainID: chainID, generation: generation)
    }

    /// The claims of `text` if it is a well-formed token whose MAC verifies; otherwise nil.
    package func authenticate(_ text: Substring) -> PresentedToken? {
        var text = text
        return text.withUTF8 { authenticate(utf8: $0) }  // contiguous bytes: no generic UTF-8 view walk
    }

    private func authenticate(utf8: UnsafeBufferPointer<UInt8>) -> PresentedToken? {
        guard utf8.count == Self.length, utf8.starts(with: Self.prefix.utf8),
              let body = Base64URL.decode(utf8[Self.prefix.utf8.count...]),
              body.count == Self.bodyLength + Self.macLength
        else { return nil }
        let expected = mac(body[..<Self.bodyLength])
        guard Digest.constantTimeEquals(expected, body[Self.bodyLength...]) else { return nil }
        var chain: UInt64 = 0
        var generation: UInt32 = 0
        for byte in body[0..<8] { chain = chain << 8 | UInt64(byte) }
        for byte in body[8..<12] { generation = generation << 8 | UInt32(byte) }
        guard chain > 0, chain <= UInt64(Int64.max) else { return nil }
        // The same digest as `TokenHash(of:)`: SHA-256 of the token's UTF-8 text.
        return PresentedToken(
            chainID: ChainID(rawValue: Int64(chain)), generation: Int(generation),
            hash: TokenHash(bytes: Digest.sha256(UnsafeRawBufferPointer(utf8))))
    }

    /// Convenience for a whole string.
    package func authenticate(_ text: String) -> PresentedToken? { authenticate(text[...]) }

    private func mac(_ body: some Collection<UInt8>) -> [UInt8] {
        var message: [UInt8] = [0x62, 0x74, 0x31]  // "bt1": binds the MAC to this format version
        message.reserveCapacity(3 + Self.bodyLength)
        message.append(contentsOf: body)
        return Array(message.withUnsafeBytes { key.authenticationCode($0) }.prefix(Self.macLength))
    }
}

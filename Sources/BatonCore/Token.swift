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
    /// `bt1_…` or `bt2_…`: what the client presents as `Authorization: Bearer`.
    package let text: String
    /// What the database keeps.
    package let hash: TokenHash
    /// The chain it belongs to.
    package let chainID: ChainID
    /// Its place in the chain (0 for the login's token).
    package let generation: Int
    /// The key that made it (0: the key file's own key, a `bt1_` token).
    package var keyID: UInt32 = 0
}

/// A presented token whose MAC checked out: its claims are ours, not the client's.
package struct PresentedToken: Sendable {
    package let chainID: ChainID
    package let generation: Int
    package let hash: TokenHash
    /// The key whose MAC it carries (0: the key file's own key).
    package var keyID: UInt32 = 0
}

/// Issues and authenticates tokens under a key ring.
///
/// Two formats, both 256 bits of secret from getrandom and a MAC truncated to 128 bits (RFC
/// 2104 §5 allows truncation to half the output). A forged or altered token is rejected here,
/// before any database read.
/// - `bt1_` + base64url(chain id: 8 bytes BE ‖ generation: 4 bytes BE ‖ secret: 32 bytes ‖
///   mac: 16 bytes), 84 characters: the mac is HMAC-SHA-256(key 0, "bt1" ‖ the first 44
///   bytes). Key 0 is the key file's own key; every token minted before the key ring existed
///   is one of these, and they keep verifying while key 0 is not retired.
/// - `bt2_` + base64url(key id: 4 bytes BE ‖ chain id: 8 ‖ generation: 4 ‖ secret: 32 ‖
///   mac: 16), 90 characters: the mac is HMAC-SHA-256(key `key id`, "bt2" ‖ the first 48
///   bytes). A ring key (id 1 and up, `baton admin key rotate`) makes these.
package struct TokenCodec: Sendable {
    /// Characters every token of the first format starts with; the digit is the format version.
    package static let prefix = "bt1_"
    /// Length of a `bt1_` token's text.
    package static let length = 84
    /// Characters every token made by a ring key starts with.
    package static let ringPrefix = "bt2_"
    /// Length of a `bt2_` token's text.
    package static let ringLength = 90

    private static let macLength = 16
    private let keys: [UInt32: HMACKey]
    /// The key new tokens are made with.
    package let mintingKeyID: UInt32
    /// The highest key id this codec knows (retired ones included): a token naming a higher
    /// one may be of a key added since (`namesNewerKey`).
    package let newestKnownID: UInt32

    /// A codec with the one key `key` (id 0): `bt1_` tokens only.
    package init(key: TokenKey) {
        self.init(keys: [0: key], minting: 0)
    }

    /// A codec that authenticates tokens of every key in `keys` (by id) and makes new ones
    /// with `minting`'s.
    /// - Parameter newestKnown: the highest id known, retired keys included (default: the
    ///   highest of `keys`).
    package init(keys: [UInt32: TokenKey], minting: UInt32, newestKnown: UInt32? = nil) {
        precondition(keys[minting] != nil, "minting key not in the ring")
        self.keys = keys.mapValues { HMACKey($0.bytes) }
        self.mintingKeyID = minting
        self.newestKnownID = newestKnown ?? keys.keys.max() ?? 0
    }

    /// A new token for `generation` of `chainID`, made with the minting key.
    package func issue(chainID: ChainID, generation: Int) -> IssuedToken {
        precondition(generation >= 0 && generation <= Int(UInt32.max), "generation out of range")
        let keyID = mintingKeyID
        var body = [UInt8]()
        body.reserveCapacity(4 + 44 + Self.macLength)
        if keyID != 0 { withUnsafeBytes(of: keyID.bigEndian) { body += $0 } }
        withUnsafeBytes(of: UInt64(bitPattern: chainID.rawValue).bigEndian) { body += $0 }
        withUnsafeBytes(of: UInt32(generation).bigEndian) { body += $0 }
        body += SecureRandom.bytes(32)
        body += body.withUnsafeBufferPointer { Self.withMAC(ofClaims: $0, keyID: keyID, key: keys[keyID]!) { Array($0) } }
        let text = (keyID == 0 ? Self.prefix : Self.ringPrefix) + Base64URL.encode(body)
        return IssuedToken(text: text, hash: TokenHash(of: text), chainID: chainID, generation: generation, keyID: keyID)
    }

    /// The claims of `text` if it is a well-formed token whose MAC verifies under a key of
    /// this ring; otherwise nil.
    package func authenticate(_ text: Substring) -> PresentedToken? {
        var text = text
        return text.withUTF8 { authenticate(utf8: $0) }  // contiguous bytes: no generic UTF-8 view walk
    }

    /// Whether `text` has the `bt2_` form and names a key id above every one this codec knows:
    /// a key another process may have added since this ring was read. Says nothing of the MAC.
    package func namesNewerKey(_ text: String) -> Bool {
        guard let id = Self.claimedKeyID(text) else { return false }
        return id > newestKnownID
    }

    /// The key id a `bt2_` token's text names, unauthenticated; nil for any other text.
    package static func claimedKeyID(_ text: String) -> UInt32? {
        let utf8 = Array(text.utf8)
        guard utf8.count == ringLength, utf8.starts(with: ringPrefix.utf8),
              let head = Base64URL.decode(utf8[4..<12]), head.count == 6 else { return nil }
        return head[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    private func authenticate(utf8: UnsafeBufferPointer<UInt8>) -> PresentedToken? {
        let keyID: UInt32
        let body: [UInt8]
        if utf8.count == Self.length, utf8.starts(with: Self.prefix.utf8) {
            guard let decoded = Base64URL.decode(utf8[Self.prefix.utf8.count...]), decoded.count == 44 + Self.macLength else { return nil }
            keyID = 0
            body = decoded
        } else if utf8.count == Self.ringLength, utf8.starts(with: Self.ringPrefix.utf8) {
            guard let decoded = Base64URL.decode(utf8[Self.ringPrefix.utf8.count...]), decoded.count == 48 + Self.macLength else { return nil }
            keyID = decoded[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard keyID != 0 else { return nil }  // key 0 makes bt1_ tokens only
            body = decoded
        } else {
            return nil
        }
        guard let key = keys[keyID], Self.macVerifies(body, keyID: keyID, key: key) else { return nil }
        let offset = keyID == 0 ? 0 : 4
        var chain: UInt64 = 0
        var generation: UInt32 = 0
        for byte in body[offset..<offset + 8] { chain = chain << 8 | UInt64(byte) }
        for byte in body[offset + 8..<offset + 12] { generation = generation << 8 | UInt32(byte) }
        guard chain > 0, chain <= UInt64(Int64.max) else { return nil }
        // The same digest as `TokenHash(of:)`: SHA-256 of the token's UTF-8 text.
        return PresentedToken(
            chainID: ChainID(rawValue: Int64(chain)), generation: Int(generation),
            hash: TokenHash(bytes: Digest.sha256(UnsafeRawBufferPointer(utf8))), keyID: keyID)
    }

    /// Convenience for a whole string.
    package func authenticate(_ text: String) -> PresentedToken? { authenticate(text[...]) }

    /// Whether the last `macLength` bytes of `body` are the MAC of the bytes before them.
    private static func macVerifies(_ body: [UInt8], keyID: UInt32, key: HMACKey) -> Bool {
        let claims = body.count - macLength
        guard claims >= 0 else { return false }
        return body.withUnsafeBufferPointer { body in
            withMAC(ofClaims: UnsafeBufferPointer(rebasing: body[..<claims]), keyID: keyID, key: key) { code in
                Digest.constantTimeEquals(UnsafeRawBufferPointer(code), UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: body[claims...])))
            }
        }
    }

    /// The MAC of `claims` (at most 48 bytes): HMAC-SHA-256 under `key` of "bt1" or "bt2" (which
    /// binds it to the format version) ‖ the claims, truncated to `macLength` bytes. Built in
    /// stack memory, without an allocation: verify authenticates a token on every request.
    private static func withMAC<Result>(ofClaims claims: UnsafeBufferPointer<UInt8>, keyID: UInt32, key: HMACKey,
                                        _ use: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let messageCapacity = 3 + 48  // the format's 3 bytes and the longest claims (bt2_)
        precondition(claims.count <= 48, "a token's claims are 44 or 48 bytes")
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: messageCapacity + 32) { scratch in
            scratch[0] = 0x62
            scratch[1] = 0x74
            scratch[2] = keyID == 0 ? 0x31 : 0x32
            if let claimBytes = claims.baseAddress {
                UnsafeMutableRawPointer(scratch.baseAddress! + 3).copyMemory(from: claimBytes, byteCount: claims.count)
            }
            let code = UnsafeMutableBufferPointer(rebasing: scratch[messageCapacity...])
            key.authenticationCode(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: scratch[..<(3 + claims.count)])), into: code)
            return use(UnsafeBufferPointer(rebasing: code[..<macLength]))
        }
    }
}

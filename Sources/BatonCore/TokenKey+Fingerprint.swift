/// What a database records of its token key, and what makes a key unusable.
extension TokenKey {
    /// The label the fingerprint authenticates: fixed, so every copy of one key gives one
    /// fingerprint and the fingerprint reveals nothing of the key (HMAC is a PRF).
    package static let fingerprintLabel = "baton key fingerprint v1"

    /// HMAC-SHA-256 of `fingerprintLabel` under the key, as 64 lowercase hex digits: stored in
    /// the database when it gets its key, compared at every start (docs/admin.md, "The key
    /// file"). Never the key itself.
    package var fingerprint: String {
        let code = Array(Self.fingerprintLabel.utf8).withUnsafeBytes { HMACKey(bytes).authenticationCode($0) }
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: code.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// A 32-byte key for another use, derived from this one: HMAC-SHA-256 of `label` under the
    /// key. Every copy of the key derives the same one; it reveals nothing of the key, and
    /// keys of different labels nothing of each other (HMAC is a PRF).
    package func derivedKey(label: String) -> [UInt8] {
        Array(label.utf8).withUnsafeBytes { HMACKey(bytes).authenticationCode($0) }
    }

    /// The fingerprint's first 16 hex digits, as messages and the `listening` line show it.
    package var shortFingerprint: String { String(fingerprint.prefix(16)) }

    /// Fewer distinct byte values than this and the key was not drawn at random: 32 random
    /// bytes take about 30 distinct values, and fewer than 16 has a probability of about
    /// 3 × 10^-17 (some 2^-55), while a constant (`00…00`), a repeated byte pair or a repeated
    /// counting pattern (`0123…ef` × 4) takes 1, 2 or 8.
    package static let minimumDistinctBytes = 16

    /// How many distinct values the key's 32 bytes take.
    package var distinctByteCount: Int { Set(bytes).count }

    /// Whether the key looks drawn at random (see `minimumDistinctBytes`).
    package var looksRandom: Bool { distinctByteCount >= Self.minimumDistinctBytes }
}

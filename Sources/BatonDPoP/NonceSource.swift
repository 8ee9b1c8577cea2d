import BatonCore

/// Stateless server nonces (RFC 9449 §8): a nonce is the HMAC-SHA-256, under a key the
/// server's instances share, of the number of the time slot it was issued in. A nonce is
/// accepted in its own slot and the next one, so it lives between one and two slots; no
/// instance remembers any nonce, and every instance with the key accepts every other's.
///
/// A nonce proves that its proof was made after the nonce was issued, whatever the client's
/// clock says: the freshness a wrong clock cannot give through `iat` (§11.1).
///
/// Rotation: a source made with the key it replaced (`previousKey`) keeps accepting that key's
/// nonces until `previousAcceptedUntil` (the start plus one nonce lifetime), so a nonce issued
/// just before a restart with a new key is not refused; it issues only with the new key.
package struct NonceSource: Sendable {
    /// The length of a slot.
    package let slot: Duration
    private let key: HMACKey
    private let previousKey: HMACKey?
    private let previousAcceptedUntil: Instant

    /// Domain separation: the key may be shared with another use without its MACs being nonces.
    private static let label = Array("baton dpop nonce v1\0".utf8)

    /// A source with `key` (at least 32 bytes, the same on every instance) and `slot`.
    /// - Parameters:
    ///   - previousKey: the key this one replaced, whose nonces stay valid until
    ///     `previousAcceptedUntil` (one `lifetime` after the rotation); nil: none.
    package init(key: [UInt8], slot: Duration = .seconds(60), previousKey: [UInt8]? = nil,
                 previousAcceptedUntil: Instant = Instant(milliseconds: 0)) {
        precondition(key.count >= 32, "a nonce key needs at least 32 bytes")
        precondition(slot >= .seconds(1), "a nonce slot is at least a second")
        precondition(previousKey.map { $0.count >= 32 } ?? true, "a nonce key needs at least 32 bytes")
        self.key = HMACKey(key)
        self.slot = slot
        self.previousKey = previousKey.map(HMACKey.init)
        self.previousAcceptedUntil = previousAcceptedUntil
    }

    /// The nonce to hand out at `now` (the `DPoP-Nonce` header): 43 base64url characters.
    package func nonce(at now: Instant) -> String {
        Base64URL.encode(code(forSlot: slotNumber(at: now)))
    }

    /// Whether `nonce` was issued, with this key, in the slot of `now` or the one before; or
    /// with the previous key (until `previousAcceptedUntil`). Every candidate is compared in
    /// constant time, whichever matches.
    package func accepts(_ nonce: String, at now: Instant) -> Bool {
        guard let presented = Base64URL.decode(Array(nonce.utf8)[...]), presented.count == 32 else { return false }
        let current = slotNumber(at: now)
        var matches = false
        for (candidate, until) in [(key, Instant(milliseconds: .max))] + (previousKey.map { [($0, previousAcceptedUntil)] } ?? []) {
            let inTime = now < until
            let matchesCurrent = Digest.constantTimeEquals(code(forSlot: current, under: candidate), presented)
            let matchesPrevious = Digest.constantTimeEquals(code(forSlot: current &- 1, under: candidate), presented)
            matches = matches || (inTime && (matchesCurrent || matchesPrevious))
        }
        return matches
    }

    /// The longest a nonce can be accepted after the proof carrying it was first accepted.
    package var lifetime: Duration { slot * 2 }

    private func slotNumber(at now: Instant) -> Int64 {
        let length = slot.wholeMilliseconds
        // Rounded down for instants before 1970 as well, so slots never straddle zero.
        return now.milliseconds >= 0 ? now.milliseconds / length : (now.milliseconds - length + 1) / length
    }

    private func code(forSlot number: Int64, under key: HMACKey? = nil) -> [UInt8] {
        var message = Self.label
        withUnsafeBytes(of: number.bigEndian) { message.append(contentsOf: $0) }
        return message.withUnsafeBytes { (key ?? self.key).authenticationCode($0) }
    }
}

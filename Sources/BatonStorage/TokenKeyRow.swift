import BatonCore

/// One row of the token key ring (`token_keys`, schema version 8): a key that makes or made
/// tokens. Row 0 stands for the key file's own key (nothing wrapped: the file holds it) and is
/// written by the first rotation; rows 1 and up hold random keys wrapped under the key file's
/// key (`KeyWrap`). Never the key itself.
package struct TokenKeyRow: Sendable, Equatable {
    package var id: UInt32
    /// `KeyWrap.wrap`'s 80 bytes; nil for row 0.
    package var wrapped: [UInt8]?
    /// `TokenKey.fingerprint` of the key (64 hex digits).
    package var fingerprint: String
    package var createdAt: Instant
    /// When `baton admin key retire` retired it; its tokens are refused from then on.
    package var retiredAt: Instant?

    package init(id: UInt32, wrapped: [UInt8]?, fingerprint: String, createdAt: Instant, retiredAt: Instant? = nil) {
        self.id = id
        self.wrapped = wrapped
        self.fingerprint = fingerprint
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}

/// A key as `baton admin key list` shows it: its row and how many live chains hold a token of
/// it (their head was made with it).
package struct TokenKeyStatus: Sendable, Equatable {
    package var row: TokenKeyRow
    package var liveChains: Int
    /// Whether new tokens are made with it (the newest key not retired).
    package var isMinting: Bool

    package init(row: TokenKeyRow, liveChains: Int, isMinting: Bool) {
        self.row = row
        self.liveChains = liveChains
        self.isMinting = isMinting
    }
}

/// The token key ring's operations for `baton admin key …`, on both stores (docs/admin.md,
/// "Rotating the token key"). The store must be opened with the key file's key.
package protocol KeyRingStore: AnyObject, Sendable {
    /// Adds a new random key that every instance makes new tokens with from its next ring
    /// read on (audited `key_rotated`). The first rotation also writes row 0 for the key
    /// file's own key. - Returns: the new key's row.
    func rotateKey(context: RequestContext) throws(BatonError) -> TokenKeyRow
    /// Every key, oldest first, with its live chains.
    func keyStatuses() throws(BatonError) -> [TokenKeyStatus]
    /// Retires key `id` (audited `key_retired`): refused for an unknown, already retired or
    /// minting key, for one superseded less than `KeyRingCache.retireAfter` ago, and while
    /// live chains hold a token of it unless `force`, which revokes those (`key_retired`).
    /// - Returns: the chains revoked.
    /// - Throws: `.invalidArgument` with the reason; `.unavailable`.
    func retireKey(_ id: UInt32, force: Bool, context: RequestContext) throws(BatonError) -> [ChainID]
}

extension AuditEvent {
    /// `baton admin key rotate` added `row`'s key.
    package static func keyRotated(_ row: TokenKeyRow, context: RequestContext) -> AuditEvent {
        AuditEvent(kind: .keyRotated, context: context,
                   detail: ["key_id": .int(Int64(row.id)), "fingerprint": .string(row.fingerprint)])
    }

    /// `baton admin key retire` retired `row`'s key, revoking `revoked` chains.
    package static func keyRetired(_ row: TokenKeyRow, revoked: Int, context: RequestContext) -> AuditEvent {
        AuditEvent(kind: .keyRetired, context: context,
                   detail: ["key_id": .int(Int64(row.id)), "fingerprint": .string(row.fingerprint), "revoked_chains": .int(Int64(revoked))])
    }
}

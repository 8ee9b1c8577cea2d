import BatonCore

/// A chain's row with its user's name: what every token operation reads first.
struct ChainRecord {
    var head: ChainHead
    var username: String

    private static let selectSQL = """
        SELECT c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_hash,
               c.head_issued_at, c.head_expires_at, c.head_presented, c.revoked_reason, u.username,
               c.auth_time, c.confirm_failures, u.disabled_at IS NOT NULL
        FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = ?
        """

    /// The chain `id`, or nil when there is none (forged id, or pruned).
    static func load(_ id: ChainID, on connection: Connection) throws(SQLiteError) -> ChainRecord? {
        try connection.statement(selectSQL).first([.int(id.rawValue)]) { row in
            ChainRecord(
                head: ChainHead(
                    id: id, userID: row.int(0), deviceID: row.text(1),
                    deviceClass: DeviceClass(rawValue: row.text(2)) ?? .other,
                    createdAt: Instant(milliseconds: row.int(3)), generation: Int(row.int(4)), hash: row.blob(5),
                    issuedAt: Instant(milliseconds: row.int(6)), expiresAt: Instant(milliseconds: row.int(7)),
                    presented: row.int(8) != 0, revocation: row.optionalText(9).flatMap(RevocationReason.init(rawValue:)),
                    authTime: Instant(milliseconds: row.int(11)), confirmFailures: Int(row.int(12)),
                    isUserDisabled: row.int(13) != 0),
                username: row.text(10))
        }
    }

    /// Where `token` stands: compares with the head, then with the lineage rows stored at its
    /// generation (only read when the token is not the head).
    static func standing(of token: PresentedToken, in chain: ChainHead, on connection: Connection) throws(SQLiteError) -> Standing {
        if token.generation == chain.generation, token.hash.matches(chain.hash) { return .head }
        guard token.generation <= chain.generation else { return .unknown }
        let rows = try connection.statement(
            "SELECT hash, ended_by, ended_at, ip, user_agent, device_id FROM tokens WHERE chain_id = ? AND generation = ?"
        ).all([.int(chain.id.rawValue), .int(Int64(token.generation))]) { row -> (hash: [UInt8], end: LineageEnd) in
            let end: LineageEnd = row.text(1) == "replaced"
                ? .replaced
                : .exchanged(ExchangeRecord(
                    at: Instant(milliseconds: row.int(2)), ip: row.optionalText(3),
                    userAgent: row.optionalText(4), deviceID: row.optionalText(5)))
            return (row.blob(0), end)
        }
        return Rules.standing(of: token, in: chain, sameGeneration: rows)
    }
}

import BatonCore

/// A chain's row with its user's name, read on PostgreSQL: the first thing every token
/// operation reads. `locking` takes the row lock (`FOR UPDATE OF c`) that serializes every
/// decision about this chain across all Baton instances sharing the database.
struct ChainRow {
    var head: ChainHead
    var username: String

    private static let selectSQL = """
        SELECT c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_hash,
               c.head_issued_at, c.head_expires_at, c.head_presented, c.revoked_reason, u.username,
               c.auth_time, c.confirm_failures, u.disabled_at IS NOT NULL
        FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = $1
        """

    /// The chain `id`, or nil when there is none (forged id, or pruned).
    static func load(_ id: ChainID, locking: Bool, in transaction: Transaction) throws(PostgresError) -> ChainRow? {
        guard let row = try transaction.query(locking ? selectSQL + " FOR UPDATE OF c" : selectSQL, [String(id.rawValue)]).first else { return nil }
        func int(_ index: Int) -> Int64 { Int64(row[index] ?? "") ?? 0 }
        return ChainRow(
            head: ChainHead(
                id: id, userID: int(0), deviceID: row[1] ?? "",
                deviceClass: DeviceClass(rawValue: row[2] ?? "") ?? .other,
                createdAt: Instant(milliseconds: int(3)), generation: Int(int(4)), hash: ByteaText.decode(row[5]),
                issuedAt: Instant(milliseconds: int(6)), expiresAt: Instant(milliseconds: int(7)),
                presented: row[8] == "t", revocation: row[9].flatMap(RevocationReason.init(rawValue:)),
                authTime: Instant(milliseconds: int(11)), confirmFailures: Int(int(12)),
                isUserDisabled: row[13] == "t"),
            username: row[10] ?? "")
    }

    /// Where `token` stands: the head, or a lineage row at its generation (read only then).
    static func standing(of token: PresentedToken, in chain: ChainHead, in transaction: Transaction) throws(PostgresError) -> Standing {
        if token.generation == chain.generation, token.hash.matches(chain.hash) { return .head }
        guard token.generation <= chain.generation else { return .unknown }
        let rows = try transaction.query(
            "SELECT hash, ended_by, ended_at, ip, user_agent, device_id FROM tokens WHERE chain_id = $1 AND generation = $2",
            [String(chain.id.rawValue), String(token.generation)]
        ).map { row -> (hash: [UInt8], end: LineageEnd) in
            let end: LineageEnd = row[1] == "replaced"
                ? .replaced
                : .exchanged(ExchangeRecord(at: Instant(milliseconds: Int64(row[2] ?? "") ?? 0), ip: row[3], userAgent: row[4], deviceID: row[5]))
            return (ByteaText.decode(row[0]), end)
        }
        return Rules.standing(of: token, in: chain, sameGeneration: rows)
    }
}

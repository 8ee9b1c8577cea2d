import BatonCore
import BatonOperations
import BatonStorage

/// The operations' rows on PostgreSQL. `forUpdate` takes the row lock (`FOR UPDATE`) that
/// serializes every decision about a row across all Baton instances sharing the database;
/// the operations take a user's row before its chains' (one lock order, no deadlock).
extension Transaction: StoreTransaction {
    // MARK: Chains

    private static let chainSQL = """
        SELECT c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_hash,
               c.head_issued_at, c.head_expires_at, c.head_presented, c.revoked_reason, u.username,
               c.auth_time, c.confirm_failures, u.disabled_at IS NOT NULL, c.jkt, c.head_attempt
        FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = $1
        """
    /// `chainSQL` with the chain's row lock, made once (every exchange runs it).
    private static let chainForUpdateSQL = chainSQL + " FOR UPDATE OF c"

    package func chain(_ id: ChainID, forUpdate: Bool) throws(PostgresError) -> ChainRecord? {
        guard let row = try query(forUpdate ? Self.chainForUpdateSQL : Self.chainSQL, [String(id.rawValue)]).first else { return nil }
        return ChainRecord(
            head: ChainHead(
                id: id, userID: row.int(0), deviceID: row.text(1),
                deviceClass: DeviceClass(rawValue: row.text(2)) ?? .other,
                createdAt: row.instant(3), generation: Int(row.int(4)), hash: ByteaText.decode(row[5]),
                issuedAt: row.instant(6), expiresAt: row.instant(7),
                presented: row[8] == "t", revocation: row[9].flatMap(RevocationReason.init(rawValue:)),
                authTime: row.instant(11), confirmFailures: Int(row.int(12)),
                isUserDisabled: row[13] == "t", jkt: row[14], attempt: row[15].flatMap { Int($0) }),
            username: row.text(10))
    }

    package func lineageRows(of chain: ChainID, generation: Int) throws(PostgresError) -> [LineageRow] {
        try query(
            "SELECT hash, ended_by, ended_at, ip, user_agent, device_id, issued_at FROM tokens WHERE chain_id = $1 AND generation = $2",
            [String(chain.rawValue), String(generation)]
        ).map { row -> LineageRow in
            let end: LineageEnd = row[1] == "replaced"
                ? .replaced
                : .exchanged(ExchangeRecord(at: row.instant(2), ip: row[3], userAgent: row[4], deviceID: row[5],
                                                tokenIssuedAt: row.instant(6)))
            return (ByteaText.decode(row[0]), end)
        }
    }

    package func unrevokedChainIDs(ofUser userID: Int64) throws(PostgresError) -> [ChainID] {
        try query("SELECT id FROM chains WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at, id", [String(userID)])
            .map { ChainID(rawValue: $0.int(0)) }
    }

    package func unrevokedChainIDs(createdBy: Instant, limit: Int) throws(PostgresError) -> [ChainID] {
        try query("SELECT id FROM chains WHERE revoked_at IS NULL AND created_at <= $1 ORDER BY id LIMIT $2",
                  [String(createdBy.milliseconds), String(limit)])
            .map { ChainID(rawValue: $0.int(0)) }
    }

    package func unrevokedChainCount() throws(PostgresError) -> Int {
        Int(try query("SELECT count(*) FROM chains WHERE revoked_at IS NULL").first?.int(0) ?? 0)
    }

    package func sessionActivity(of chain: ChainID) throws(PostgresError) -> SessionActivity {
        let row = try query("SELECT device_name, last_used_at, last_used_ip, last_used_user_agent FROM chains WHERE id = $1",
                            [String(chain.rawValue)]).first
        return SessionActivity(deviceName: row?[0] ?? nil, lastUsedAt: row?.optionalInstant(1), lastAddress: row?[2] ?? nil,
                               lastUserAgent: row?[3] ?? nil)
    }

    package func markUsed(_ chain: ChainID, context: RequestContext, now: Instant) throws(PostgresError) {
        try query("UPDATE chains SET last_used_at = $1, last_used_ip = $2, last_used_user_agent = $3 WHERE id = $4",
                  [String(now.milliseconds), context.ip, context.userAgent, String(chain.rawValue)])
    }

    package func insertChain(_ chain: NewChain) throws(PostgresError) -> Bool {
        !(try query("""
            INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation,
                                head_hash, head_issued_at, head_expires_at, auth_time, jkt, head_key)
            VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $6, $8, $6, $9, $10)
            ON CONFLICT (id) DO NOTHING RETURNING id
            """, [String(chain.id.rawValue), String(chain.userID), chain.deviceID, chain.deviceClass.rawValue, chain.deviceName,
                  String(chain.createdAt.milliseconds), ByteaText.encode(chain.headHash), String(chain.headExpiresAt.milliseconds),
                  chain.jkt, String(chain.keyID)]
        ).isEmpty)
    }

    package func installHead(_ head: HeadUpdate, of chain: ChainID, now: Instant) throws(PostgresError) {
        try query("""
            UPDATE chains SET head_generation = $1, head_hash = $2, head_issued_at = $3, head_expires_at = $4,
                              head_presented = false, last_exchange_at = $3, head_key = $6, head_attempt = $7,
                              last_used_at = $3, last_used_ip = $8, last_used_user_agent = $9
            WHERE id = $5
            """, [String(head.generation), ByteaText.encode(head.hash), String(now.milliseconds), String(head.expiresAt.milliseconds),
                  String(chain.rawValue), String(head.keyID), head.attempt.map { String($0) }, head.usedFrom.ip, head.usedFrom.userAgent])
    }

    package func insertLineage(of chain: ChainHead, end: String, context: RequestContext, now: Instant) throws(PostgresError) {
        try query("""
            INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """, [String(chain.id.rawValue), String(chain.generation), ByteaText.encode(chain.hash), String(chain.issuedAt.milliseconds),
                  String(now.milliseconds), end, context.ip, context.userAgent, context.deviceID])
    }

    package func markHeadPresented(_ chain: ChainID) throws(PostgresError) {
        try query("UPDATE chains SET head_presented = true WHERE id = $1", [String(chain.rawValue)])
    }

    package func markRevoked(_ chain: ChainID, reason: RevocationReason, now: Instant) throws(PostgresError) -> Bool {
        !(try query("UPDATE chains SET revoked_at = $1, revoked_reason = $2 WHERE id = $3 AND revoked_at IS NULL RETURNING id",
                    [String(now.milliseconds), reason.rawValue, String(chain.rawValue)]).isEmpty)
    }

    package func setConfirmFailures(_ chain: ChainID, _ failures: Int) throws(PostgresError) {
        try query("UPDATE chains SET confirm_failures = $1 WHERE id = $2", [String(failures), String(chain.rawValue)])
    }

    package func markConfirmed(_ chain: ChainID, now: Instant) throws(PostgresError) {
        try query("UPDATE chains SET auth_time = $1, confirm_failures = 0 WHERE id = $2", [String(now.milliseconds), String(chain.rawValue)])
    }

    // MARK: Users

    private static func userRecord(_ row: [String?]) -> UserRecord {
        UserRecord(id: row.int(0), username: row.text(1), passwordHash: row.text(2), isDisabled: row[3] != nil)
    }

    /// Names match case-insensitively (`lower(username)` is unique), as SQLite's `COLLATE NOCASE`.
    package func user(named username: String, forUpdate: Bool) throws(PostgresError) -> UserRecord? {
        try query("SELECT id, username, password_hash, disabled_at FROM users WHERE lower(username) = lower($1)"
                  + (forUpdate ? " FOR UPDATE" : ""), [username]).first.map(Self.userRecord)
    }

    package func user(id: Int64, forUpdate: Bool) throws(PostgresError) -> UserRecord? {
        try query("SELECT id, username, password_hash, disabled_at FROM users WHERE id = $1" + (forUpdate ? " FOR UPDATE" : ""),
                  [String(id)]).first.map(Self.userRecord)
    }

    package func lockUsers(owning chains: [ChainID]) throws(PostgresError) {
        guard !chains.isEmpty else { return }
        try query("SELECT id FROM users WHERE id IN (SELECT user_id FROM chains WHERE id = ANY($1::bigint[])) ORDER BY id FOR UPDATE",
                  [bigintArray(chains.map(\.rawValue))])
    }

    package func insertUser(_ username: String, passwordHash: String, now: Instant) throws(PostgresError) -> Int64? {
        try query("""
            INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES ($1, $2, $3, $3)
            ON CONFLICT ((lower(username))) DO NOTHING RETURNING id
            """, [username, passwordHash, String(now.milliseconds)]).first?.optionalInt(0)
    }

    package func setPasswordHash(ofUser userID: Int64, _ hash: String, now: Instant) throws(PostgresError) {
        try query("UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3", [hash, String(now.milliseconds), String(userID)])
    }

    package func setDisabled(_ userID: Int64, _ disabled: Bool, now: Instant) throws(PostgresError) -> Bool {
        !(try query("UPDATE users SET disabled_at = $1 WHERE id = $2 AND (disabled_at IS NULL) = $3 RETURNING id",
                    [disabled ? String(now.milliseconds) : nil, String(userID), disabled ? "true" : "false"]).isEmpty)
    }

    // MARK: The token key

    package func recordedKeyFingerprint() throws(PostgresError) -> String? {
        try query("SELECT fingerprint FROM key_fingerprint WHERE id = 1").first?[0] ?? nil
    }

    package func recordKeyFingerprint(_ fingerprint: String, replacing: Bool, now: Instant) throws(PostgresError) {
        try query(replacing
            ? "UPDATE key_fingerprint SET fingerprint = $1, recorded_at = $2 WHERE id = 1"
            : "INSERT INTO key_fingerprint (id, fingerprint, recorded_at) VALUES (1, $1, $2)",
            [fingerprint, String(now.milliseconds)])
    }

    package func hasUsersOrChains() throws(PostgresError) -> Bool {
        try query("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM chains)").first?[0] == "t"
    }
}

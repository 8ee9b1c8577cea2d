import BatonCore
import BatonOperations
import BatonStorage

/// The operations' rows on SQLite: one connection inside a transaction, the group-commit
/// writer's (writes, many operations per durable commit) or a WAL reader's (reads).
///
/// `forUpdate` takes no lock here: every write runs on the single writer thread, one job after
/// another, so a chain read in a write is already the committed state no one else can change
/// before the job ends; a read never needs a lock.
package struct SQLiteTransaction: StoreTransaction {
    let connection: Connection

    // MARK: Chains

    private static let chainSQL = """
        SELECT c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_hash,
               c.head_issued_at, c.head_expires_at, c.head_presented, c.revoked_reason, u.username,
               c.auth_time, c.confirm_failures, u.disabled_at IS NOT NULL, c.jkt, c.head_attempt
        FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = ?
        """

    package func chain(_ id: ChainID, forUpdate: Bool) throws(SQLiteError) -> ChainRecord? {
        try connection.statement(Self.chainSQL).first([.int(id.rawValue)]) { row in
            ChainRecord(
                head: ChainHead(
                    id: id, userID: row.int(0), deviceID: row.text(1),
                    deviceClass: DeviceClass(rawValue: row.text(2)) ?? .other,
                    createdAt: Instant(milliseconds: row.int(3)), generation: Int(row.int(4)), hash: row.blob(5),
                    issuedAt: Instant(milliseconds: row.int(6)), expiresAt: Instant(milliseconds: row.int(7)),
                    presented: row.int(8) != 0, revocation: row.optionalText(9).flatMap(RevocationReason.init(rawValue:)),
                    authTime: Instant(milliseconds: row.int(11)), confirmFailures: Int(row.int(12)),
                    isUserDisabled: row.int(13) != 0, jkt: row.optionalText(14), attempt: row.optionalInt(15).map { Int($0) }),
                username: row.text(10))
        }
    }

    package func lineageRows(of chain: ChainID, generation: Int) throws(SQLiteError) -> [LineageRow] {
        try connection.statement(
            "SELECT hash, ended_by, ended_at, ip, user_agent, device_id, issued_at FROM tokens WHERE chain_id = ? AND generation = ?"
        ).all([.int(chain.rawValue), .int(Int64(generation))]) { row -> LineageRow in
            let end: LineageEnd = row.text(1) == "replaced"
                ? .replaced
                : .exchanged(ExchangeRecord(
                    at: Instant(milliseconds: row.int(2)), ip: row.optionalText(3),
                    userAgent: row.optionalText(4), deviceID: row.optionalText(5),
                    tokenIssuedAt: Instant(milliseconds: row.int(6))))
            return (row.blob(0), end)
        }
    }

    package func unrevokedChainIDs(ofUser userID: Int64) throws(SQLiteError) -> [ChainID] {
        try connection.statement("SELECT id FROM chains WHERE user_id = ? AND revoked_at IS NULL ORDER BY created_at, id")
            .all([.int(userID)]) { ChainID(rawValue: $0.int(0)) }
    }

    package func unrevokedChainIDs(createdBy: Instant, limit: Int) throws(SQLiteError) -> [ChainID] {
        try connection.statement("SELECT id FROM chains WHERE revoked_at IS NULL AND created_at <= ? ORDER BY id LIMIT ?")
            .all([.int(createdBy.milliseconds), .int(Int64(limit))]) { ChainID(rawValue: $0.int(0)) }
    }

    package func unrevokedChainCount() throws(SQLiteError) -> Int {
        Int(try connection.statement("SELECT count(*) FROM chains WHERE revoked_at IS NULL").first { $0.int(0) } ?? 0)
    }

    package func sessionActivity(of chain: ChainID) throws(SQLiteError) -> SessionActivity {
        try connection.statement("SELECT device_name, last_used_at, last_used_ip, last_used_user_agent FROM chains WHERE id = ?")
            .first([.int(chain.rawValue)]) { row in
                SessionActivity(deviceName: row.optionalText(0), lastUsedAt: row.optionalInt(1).map(Instant.init(milliseconds:)),
                                lastAddress: row.optionalText(2), lastUserAgent: row.optionalText(3))
            } ?? SessionActivity(deviceName: nil, lastUsedAt: nil, lastAddress: nil, lastUserAgent: nil)
    }

    package func markUsed(_ chain: ChainID, context: RequestContext, now: Instant) throws(SQLiteError) {
        try connection.statement("UPDATE chains SET last_used_at = ?, last_used_ip = ?, last_used_user_agent = ? WHERE id = ?")
            .execute([.int(now.milliseconds), .optional(context.ip), .optional(context.userAgent), .int(chain.rawValue)])
    }

    package func insertChain(_ chain: NewChain) throws(SQLiteError) -> Bool {
        do {
            try connection.statement("""
                INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation,
                                    head_hash, head_issued_at, head_expires_at, auth_time, jkt, head_key)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?6, ?8, ?6, ?9, ?10)
                """).execute([
                    .int(chain.id.rawValue), .int(chain.userID), .text(chain.deviceID), .text(chain.deviceClass.rawValue),
                    .optional(chain.deviceName), .int(chain.createdAt.milliseconds), .blob(chain.headHash),
                    .int(chain.headExpiresAt.milliseconds), .optional(chain.jkt), .int(Int64(chain.keyID)),
                ])
            return true
        } catch where error.isUniqueViolation {
            return false
        }
    }

    package func installHead(_ head: HeadUpdate, of chain: ChainID, now: Instant) throws(SQLiteError) {
        try connection.statement("""
            UPDATE chains SET head_generation = ?, head_hash = ?, head_issued_at = ?, head_expires_at = ?,
                              head_presented = 0, last_exchange_at = ?, head_key = ?, head_attempt = ?,
                              last_used_at = ?, last_used_ip = ?, last_used_user_agent = ?
            WHERE id = ?
            """).execute([
                .int(Int64(head.generation)), .blob(head.hash), .int(now.milliseconds), .int(head.expiresAt.milliseconds),
                .int(now.milliseconds), .int(Int64(head.keyID)), .optional(head.attempt.map { Int64($0) }),
                .int(now.milliseconds), .optional(head.usedFrom.ip), .optional(head.usedFrom.userAgent), .int(chain.rawValue),
            ])
    }

    package func insertLineage(of chain: ChainHead, end: String, context: RequestContext, now: Instant) throws(SQLiteError) {
        try connection.statement("""
            INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute([
                .int(chain.id.rawValue), .int(Int64(chain.generation)), .blob(chain.hash), .int(chain.issuedAt.milliseconds),
                .int(now.milliseconds), .text(end), .optional(context.ip), .optional(context.userAgent), .optional(context.deviceID),
            ])
    }

    package func markHeadPresented(_ chain: ChainID) throws(SQLiteError) {
        try connection.statement("UPDATE chains SET head_presented = 1 WHERE id = ?").execute([.int(chain.rawValue)])
    }

    package func markRevoked(_ chain: ChainID, reason: RevocationReason, now: Instant) throws(SQLiteError) -> Bool {
        try connection.statement("UPDATE chains SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL")
            .execute([.int(now.milliseconds), .text(reason.rawValue), .int(chain.rawValue)])
        return connection.changes == 1
    }

    package func setConfirmFailures(_ chain: ChainID, _ failures: Int) throws(SQLiteError) {
        try connection.statement("UPDATE chains SET confirm_failures = ? WHERE id = ?").execute([.int(Int64(failures)), .int(chain.rawValue)])
    }

    package func markConfirmed(_ chain: ChainID, now: Instant) throws(SQLiteError) {
        try connection.statement("UPDATE chains SET auth_time = ?, confirm_failures = 0 WHERE id = ?")
            .execute([.int(now.milliseconds), .int(chain.rawValue)])
    }

    // MARK: Users

    private static func userRecord(_ row: Row) -> UserRecord {
        UserRecord(id: row.int(0), username: row.text(1), passwordHash: row.text(2), isDisabled: !row.isNull(3))
    }

    /// `username` is `COLLATE NOCASE` in the schema: `=` matches case-insensitively.
    package func user(named username: String, forUpdate: Bool) throws(SQLiteError) -> UserRecord? {
        try connection.statement("SELECT id, username, password_hash, disabled_at FROM users WHERE username = ?")
            .first([.text(username)], Self.userRecord)
    }

    package func user(id: Int64, forUpdate: Bool) throws(SQLiteError) -> UserRecord? {
        try connection.statement("SELECT id, username, password_hash, disabled_at FROM users WHERE id = ?")
            .first([.int(id)], Self.userRecord)
    }

    package func lockUsers(owning chains: [ChainID]) throws(SQLiteError) {}

    package func insertUser(_ username: String, passwordHash: String, now: Instant) throws(SQLiteError) -> Int64? {
        do {
            try connection.statement("INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES (?1, ?2, ?3, ?3)")
                .execute([.text(username), .text(passwordHash), .int(now.milliseconds)])
            return connection.lastInsertRowID
        } catch where error.isUniqueViolation {
            return nil
        }
    }

    package func setPasswordHash(ofUser userID: Int64, _ hash: String, now: Instant) throws(SQLiteError) {
        try connection.statement("UPDATE users SET password_hash = ?, password_changed_at = ? WHERE id = ?")
            .execute([.text(hash), .int(now.milliseconds), .int(userID)])
    }

    package func setDisabled(_ userID: Int64, _ disabled: Bool, now: Instant) throws(SQLiteError) -> Bool {
        try connection.statement("UPDATE users SET disabled_at = ? WHERE id = ? AND (disabled_at IS NULL) = ?")
            .execute([disabled ? .int(now.milliseconds) : .null, .int(userID), .int(disabled ? 1 : 0)])
        return connection.changes == 1
    }

    // MARK: The token key

    package func recordedKeyFingerprint() throws(SQLiteError) -> String? {
        try connection.statement("SELECT fingerprint FROM key_fingerprint WHERE id = 1").first { $0.text(0) }
    }

    package func recordKeyFingerprint(_ fingerprint: String, replacing: Bool, now: Instant) throws(SQLiteError) {
        try connection.statement(replacing
            ? "UPDATE key_fingerprint SET fingerprint = ?1, recorded_at = ?2 WHERE id = 1"
            : "INSERT INTO key_fingerprint (id, fingerprint, recorded_at) VALUES (1, ?1, ?2)"
        ).execute([.text(fingerprint), .int(now.milliseconds)])
    }

    package func hasUsersOrChains() throws(SQLiteError) -> Bool {
        try connection.statement("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM chains)").first { $0.int(0) } != 0
    }

    // MARK: Audit

    /// Appends in the caller's transaction, so an event commits or rolls back with the state
    /// change it describes; the writer counts it for metrics once the batch committed.
    package func append(_ event: AuditEvent, at now: Instant) throws(SQLiteError) {
        try Self.append(event, at: now, on: connection)
    }

    /// `append` on a bare connection (the key check, before the writer exists).
    package static func append(_ event: AuditEvent, at now: Instant, on connection: Connection) throws(SQLiteError) {
        try connection.statement("""
            INSERT INTO audit (at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute([
                .int(now.milliseconds), .text(event.kind.rawValue), .optional(event.userID), .optional(event.username),
                .optional(event.chainID?.rawValue), .optional(event.generation.map(Int64.init)),
                .optional(event.context.ip), .optional(event.context.userAgent), .optional(event.context.deviceID),
                .text(JSONValue.object(event.detail).text),
            ])
        connection.uncommittedEvents.append(event)
    }
}

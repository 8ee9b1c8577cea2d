import BatonCore
import BatonStorage
import Glibc

extension TokenStore: AdminStore {}

extension TokenStore {
    /// Chains, newest first: live ones, or with `includeEnded` every chain.
    /// - Throws: `.userNotFound` when `username` names no user.
    package func chains(ofUser username: String? = nil, includeEnded: Bool) throws(BatonError) -> [ChainSummary] {
        let now = clock.now()
        let result = try readConnection { [self] connection throws(SQLiteError) -> Result<[ChainSummary], BatonError> in
            var userID: Int64?
            if let username {
                guard let id = try connection.statement("SELECT id FROM users WHERE username = ?").first([.text(username)], { $0.int(0) })
                else { return .failure(.userNotFound(username)) }
                userID = id
            }
            let sql = """
                SELECT c.id, c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_hash,
                       c.head_issued_at, c.head_expires_at, c.head_presented, c.revoked_reason, u.username,
                       c.last_exchange_at, c.revoked_at, c.auth_time, c.confirm_failures, c.jkt
                FROM chains c JOIN users u ON u.id = c.user_id
                WHERE (?1 IS NULL OR c.user_id = ?1) AND (?2 OR c.revoked_at IS NULL)
                ORDER BY c.created_at DESC, c.id
                """
            let rows = try connection.statement(sql).all([.optional(userID), .int(includeEnded ? 1 : 0)]) { row in
                ChainSummary(
                    head: ChainHead(
                        id: ChainID(rawValue: row.int(0)), userID: row.int(1), deviceID: row.text(2),
                        deviceClass: DeviceClass(rawValue: row.text(3)) ?? .other, createdAt: Instant(milliseconds: row.int(4)),
                        generation: Int(row.int(5)), hash: [], issuedAt: Instant(milliseconds: row.int(7)),
                        expiresAt: Instant(milliseconds: row.int(8)), presented: row.int(9) != 0,
                        revocation: row.optionalText(10).flatMap(RevocationReason.init(rawValue:)),
                        authTime: Instant(milliseconds: row.int(14)), confirmFailures: Int(row.int(15)), jkt: row.optionalText(16)),
                    username: row.text(11), lastExchangeAt: row.optionalInt(12).map(Instant.init(milliseconds:)),
                    revokedAt: row.optionalInt(13).map(Instant.init(milliseconds:)))
            }
            return .success(includeEnded ? rows : rows.filter { $0.head.isLive(at: now, policy) })
        }
        return try result.get()
    }

    /// The WHERE clause of an `AuditFilter`: parameters ?1-?6 are username, chain, kind, since, until, after id.
    private static let auditWhere = """
        WHERE (?1 IS NULL OR username = ?1 COLLATE NOCASE) AND (?2 IS NULL OR chain_id = ?2)
          AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR at >= ?4) AND (?5 IS NULL OR at <= ?5)
          AND (?6 IS NULL OR id > ?6)
        """

    /// Audit events matching `filter`, oldest first.
    package func auditEvents(_ filter: AuditFilter) throws(BatonError) -> [AuditRecord] {
        try readConnection { connection throws(SQLiteError) in
            let sql = """
                SELECT id, at, kind, username, chain_id, generation, ip, user_agent, device_id, detail FROM audit
                \(Self.auditWhere) ORDER BY id DESC LIMIT ?7
                """
            let rows = try connection.statement(sql).all([
                .optional(filter.username), .optional(filter.chainID?.rawValue), .optional(filter.kind?.rawValue),
                .optional(filter.since?.milliseconds), .optional(filter.until?.milliseconds), .optional(filter.afterID),
                .int(Int64(filter.limit ?? -1)),
            ]) { row in
                AuditRecord(
                    id: row.int(0), at: Instant(milliseconds: row.int(1)), kind: row.text(2), username: row.optionalText(3),
                    chainID: row.optionalInt(4).map(ChainID.init(rawValue:)), generation: row.optionalInt(5).map { Int($0) },
                    ip: row.optionalText(6), userAgent: row.optionalText(7), deviceID: row.optionalText(8), detail: row.text(9))
            }
            return rows.reversed()
        }
    }

    /// How many audit events match `filter`, ignoring its limit.
    package func auditEventCount(_ filter: AuditFilter) throws(BatonError) -> Int {
        try readConnection { connection throws(SQLiteError) in
            let sql = """
                SELECT count(*) FROM audit \(Self.auditWhere)
                """
            return Int(try connection.statement(sql).first([
                .optional(filter.username), .optional(filter.chainID?.rawValue), .optional(filter.kind?.rawValue),
                .optional(filter.since?.milliseconds), .optional(filter.until?.milliseconds), .optional(filter.afterID),
            ]) { $0.int(0) } ?? 0)
        }
    }

    /// Counts for `baton admin stats`.
    package func statistics() throws(BatonError) -> StoreStatistics {
        let now = clock.now()
        // The database file and its WAL, as `ls` shows them.
        let fileBytes = ["", "-wal"].reduce(Int64(0)) { total, suffix in
            var info = stat()
            return stat(path + suffix, &info) == 0 ? total + Int64(info.st_size) : total
        }
        return try readConnection { [self] connection throws(SQLiteError) in
            func count(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> Int {
                Int(try connection.statement(sql).first(values) { $0.int(0) } ?? 0)
            }
            let hour = (now - .seconds(3600)).milliseconds, day = (now - .seconds(86_400)).milliseconds
            let kindSince = "SELECT count(*) FROM audit WHERE kind = ? AND at >= ?"
            // Live: unrevoked, inside the absolute life, head still exchangeable.
            let live = try count(
                "SELECT count(*) FROM chains WHERE revoked_at IS NULL AND created_at > ? AND head_expires_at > ?",
                [.int((now - policy.maxSession).milliseconds), .int((now - policy.exchangeWindow).milliseconds)])
            return StoreStatistics(
                users: try count("SELECT count(*) FROM users"), liveChains: live,
                exchangesLastHour: try count(kindSince, [.text("exchanged"), .int(hour)]),
                exchangesLastDay: try count(kindSince, [.text("exchanged"), .int(day)]),
                reusesLastHour: try count(kindSince, [.text("reuse_detected"), .int(hour)]),
                reusesLastDay: try count(kindSince, [.text("reuse_detected"), .int(day)]),
                databaseBytes: fileBytes, databaseBytesCover: "with WAL")
        }
    }
}

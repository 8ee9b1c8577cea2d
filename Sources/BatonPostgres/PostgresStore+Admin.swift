import BatonCore
import BatonStorage

extension PostgresStore: AdminStore {}

extension PostgresStore {
    /// Runs `body`'s reads in one REPEATABLE READ, READ ONLY transaction: one snapshot for
    /// several statements, as SQLite's reads have (a plain `read` runs each on its own).
    func snapshot<T>(_ body: (Transaction) throws(PostgresError) -> T) throws(BatonError) -> T {
        try transaction { transaction throws(PostgresError) -> T in
            try transaction.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return try body(transaction)
        }
    }

    /// SQL true for a live chain of table alias `alias` (`ChainHead.isLive`: unrevoked, inside
    /// its absolute life, head still exchangeable), with `liveBounds` as `$1` and `$2`.
    static func isLive(_ alias: String) -> String {
        "\(alias).revoked_at IS NULL AND \(alias).created_at > $1::bigint AND \(alias).head_expires_at > $2::bigint"
    }

    /// The parameters of `isLive` at `now` under this store's policy.
    func liveBounds(_ now: Instant) -> [String?] {
        [String((now - policy.maxSession).milliseconds), String((now - policy.exchangeWindow).milliseconds)]
    }

    /// Chains, newest first: live ones, or with `includeEnded` every chain.
    /// - Throws: `.userNotFound` when `username` names no user.
    package func chains(ofUser username: String? = nil, includeEnded: Bool) throws(BatonError) -> [ChainSummary] {
        let now = clock.now()
        let result = try snapshot { [self] transaction throws(PostgresError) -> Result<[ChainSummary], BatonError> in
            var userID: Int64?
            if let username {
                guard let id = try transaction.query("SELECT id FROM users WHERE lower(username) = lower($1)", [username]).first?.int(0)
                else { return .failure(.userNotFound(username)) }
                userID = id
            }
            let rows = try transaction.query("""
                SELECT c.id, c.user_id, c.device_id, c.device_class, c.created_at, c.head_generation, c.head_issued_at,
                       c.head_expires_at, c.head_presented, c.revoked_reason, u.username, c.last_exchange_at, c.revoked_at,
                       c.auth_time, c.confirm_failures, c.jkt
                FROM chains c JOIN users u ON u.id = c.user_id
                WHERE ($1::bigint IS NULL OR c.user_id = $1::bigint) AND ($2::boolean OR c.revoked_at IS NULL)
                ORDER BY c.created_at DESC, c.id
                """, [userID.map(String.init), includeEnded ? "true" : "false"]
            ).map { row in
                ChainSummary(
                    head: ChainHead(
                        id: ChainID(rawValue: row.int(0)), userID: row.int(1), deviceID: row.text(2),
                        deviceClass: DeviceClass(rawValue: row.text(3)) ?? .other, createdAt: row.instant(4),
                        generation: Int(row.int(5)), hash: [], issuedAt: row.instant(6), expiresAt: row.instant(7),
                        presented: row[8] == "t", revocation: row[9].flatMap(RevocationReason.init(rawValue:)),
                        authTime: row.instant(13), confirmFailures: Int(row.int(14)), jkt: row[15]),
                    username: row.text(10), lastExchangeAt: row.optionalInstant(11), revokedAt: row.optionalInstant(12))
            }
            return .success(includeEnded ? rows : rows.filter { $0.head.isLive(at: now, policy) })
        }
        return try result.get()
    }

    /// The WHERE clause of an `AuditFilter`: `$1`-`$6` are username, chain, kind, since, until,
    /// after id. Usernames match case-insensitively, as SQLite's `COLLATE NOCASE` does.
    private static let auditWhere = """
        WHERE ($1::text IS NULL OR lower(username) = lower($1::text)) AND ($2::bigint IS NULL OR chain_id = $2::bigint)
          AND ($3::text IS NULL OR kind = $3::text) AND ($4::bigint IS NULL OR at >= $4::bigint)
          AND ($5::bigint IS NULL OR at <= $5::bigint) AND ($6::bigint IS NULL OR id > $6::bigint)
        """

    private static func auditParameters(_ filter: AuditFilter) -> [String?] {
        [filter.username, filter.chainID.map { String($0.rawValue) }, filter.kind?.rawValue,
         filter.since.map { String($0.milliseconds) }, filter.until.map { String($0.milliseconds) }, filter.afterID.map(String.init)]
    }

    /// Audit events matching `filter`, oldest first.
    package func auditEvents(_ filter: AuditFilter) throws(BatonError) -> [AuditRecord] {
        try read { transaction throws(PostgresError) in
            // LIMIT NULL is no limit.
            try transaction.query("""
                SELECT id, at, kind, username, chain_id, generation, ip, user_agent, device_id, detail FROM audit
                \(Self.auditWhere) ORDER BY id DESC LIMIT $7::bigint
                """, Self.auditParameters(filter) + [filter.limit.map(String.init)]
            ).reversed().map { row in
                AuditRecord(
                    id: row.int(0), at: row.instant(1), kind: row.text(2), username: row[3], chainID: row.optionalInt(4).map(ChainID.init(rawValue:)),
                    generation: row.optionalInt(5).map { Int($0) }, ip: row[6], userAgent: row[7], deviceID: row[8], detail: row.text(9))
            }
        }
    }

    /// How many audit events match `filter`, ignoring its limit.
    package func auditEventCount(_ filter: AuditFilter) throws(BatonError) -> Int {
        try read { transaction throws(PostgresError) in
            Int(try transaction.query("SELECT count(*) FROM audit \(Self.auditWhere)", Self.auditParameters(filter)).first?.int(0) ?? 0)
        }
    }

    /// Counts for `baton admin stats`; the size is `pg_database_size` (tables, indexes, and
    /// whatever else the database holds), not a file.
    package func statistics() throws(BatonError) -> StoreStatistics {
        let now = clock.now()
        return try snapshot { [self] transaction throws(PostgresError) in
            let hour = String((now - .seconds(3600)).milliseconds), day = String((now - .seconds(86_400)).milliseconds)
            let row = try transaction.query("""
                SELECT (SELECT count(*) FROM users),
                       (SELECT count(*) FROM chains c WHERE \(Self.isLive("c"))),
                       (SELECT count(*) FROM audit WHERE kind = 'exchanged' AND at >= $3::bigint),
                       (SELECT count(*) FROM audit WHERE kind = 'exchanged' AND at >= $4::bigint),
                       (SELECT count(*) FROM audit WHERE kind = 'reuse_detected' AND at >= $3::bigint),
                       (SELECT count(*) FROM audit WHERE kind = 'reuse_detected' AND at >= $4::bigint),
                       pg_database_size(current_database())
                """, liveBounds(now) + [hour, day]
            ).first ?? []
            func count(_ index: Int) -> Int { index < row.count ? Int(row.int(index)) : 0 }
            return StoreStatistics(
                users: count(0), liveChains: count(1), exchangesLastHour: count(2), exchangesLastDay: count(3),
                reusesLastHour: count(4), reusesLastDay: count(5), databaseBytes: row.count > 6 ? row.int(6) : 0,
                databaseBytesCover: "PostgreSQL")
        }
    }
}
extension PostgresStore: KeyRingStore {}

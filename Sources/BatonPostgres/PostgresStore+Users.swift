import BatonCore
import BatonStorage

extension PostgresStore {
    /// Every account with its live chain count, by name (case-insensitively, as SQLite's
    /// `COLLATE NOCASE` orders them).
    package func users() throws(BatonError) -> [UserSummary] {
        let now = clock.now()
        return try read { [self] transaction throws(PostgresError) in
            try transaction.query("""
                SELECT u.id, u.username, u.created_at, u.disabled_at IS NOT NULL,
                       (SELECT count(*) FROM chains c WHERE c.user_id = u.id AND \(Self.isLive("c")))
                FROM users u ORDER BY lower(u.username) COLLATE "C", u.username COLLATE "C"
                """, liveBounds(now)
            ).map { row in
                UserSummary(id: row.int(0), username: row.text(1), createdAt: row.instant(2), isDisabled: row[3] == "t", liveChains: Int(row.int(4)))
            }
        }
    }
}

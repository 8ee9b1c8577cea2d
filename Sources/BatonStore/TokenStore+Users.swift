import BatonCore
import BatonOperations
import BatonStorage

extension TokenStore {
    /// The context recorded on events caused by an operator.
    package static let adminContext = RequestContext.admin

    /// Every account with its live chain count, by name.
    package func users() throws(BatonError) -> [UserSummary] {
        let now = clock.now()
        return try read { [self] transaction throws(SQLiteError) in
            let rows = try transaction.connection.statement("SELECT id, username, created_at, disabled_at FROM users ORDER BY username")
                .all { (id: $0.int(0), name: $0.text(1), created: $0.int(2), disabled: !$0.isNull(3)) }
            var summaries: [UserSummary] = []
            for row in rows {
                let live = try transaction.unrevokedChains(ofUser: row.id, forUpdate: false).count { $0.isLive(at: now, policy) }
                summaries.append(UserSummary(id: row.id, username: row.name, createdAt: Instant(milliseconds: row.created),
                                             isDisabled: row.disabled, liveChains: live))
            }
            return summaries
        }
    }
}

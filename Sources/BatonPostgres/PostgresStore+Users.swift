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

    /// Sets a new password and revokes every unrevoked chain of the user, whatever its age (`password_changed`).
    /// - Returns: the chains revoked.
    @discardableResult
    package func changePassword(_ username: String, to password: String, context: RequestContext = .admin) throws(BatonError) -> [ChainID] {
        let hash = try hasher.hash(password)
        return try updateUser(username, kind: .passwordChanged, revoking: .passwordChanged, context: context) { id, now, transaction throws(PostgresError) in
            try transaction.query("UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3",
                                  [hash, String(now.milliseconds), String(id)])
            return true
        }.revoked
    }

    /// Disables (revoking every unrevoked chain, whatever its age, `user_disabled`) or re-enables an account. An
    /// account already in that state is left alone: no event, nothing revoked, `changed` false.
    @discardableResult
    package func setDisabled(_ username: String, _ disabled: Bool, context: RequestContext = .admin) throws(BatonError) -> AccountChange {
        try updateUser(username, kind: disabled ? .userDisabled : .userEnabled, revoking: disabled ? .userDisabled : nil, context: context) { id, now, transaction throws(PostgresError) in
            !(try transaction.query(
                "UPDATE users SET disabled_at = $1 WHERE id = $2 AND (disabled_at IS NULL) = $3 RETURNING id",
                [disabled ? String(now.milliseconds) : nil, String(id), disabled ? "true" : "false"]
            ).isEmpty)
        }
    }

    /// Revokes every unrevoked chain of a user, whatever its age (`admin`, with the operator's `note`).
    package func revokeChains(ofUser username: String, note: String? = nil, context: RequestContext = .admin) throws(BatonError) -> [ChainID] {
        try updateUser(username, kind: nil, revoking: .admin, note: note, context: context) { _, _, _ throws(PostgresError) in true }.revoked
    }

    /// Revokes one chain (`admin`, with the operator's `note`), taking its user's row lock
    /// before the chain's, as every operation that locks both does.
    /// - Returns: false when it was already revoked.
    package func revokeChain(_ id: ChainID, note: String? = nil, context: RequestContext = .admin) throws(BatonError) -> Bool {
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<Bool, BatonError> in
            // A chain's user never changes, so reading it unlocked is safe.
            guard let userID = try transaction.query("SELECT user_id FROM chains WHERE id = $1", [String(id.rawValue)]).first?.int(0)
            else { return .failure(.chainNotFound(id)) }
            try lockUser(userID, in: transaction)
            guard let row = try ChainRow.load(id, locking: true, in: transaction) else { return .failure(.chainNotFound(id)) }
            return .success(try revoke(row.head, username: row.username, reason: .admin, note: note, context: context, now: clock.now(), in: transaction))
        }
        return try result.get()
    }

    /// Finds and locks the user's row, then runs `change`; when it changed something (returned
    /// true), audits `kind` and revokes every unrevoked chain of the user with `reason`: the admin CLI does not know the server's lifetimes, so "live by the defaults" would miss chains a longer-configured server still accepts.
    ///
    /// Lock order: the user's row first, then its chains' rows (`liveChains`), as `login` does,
    /// so an operator's change and a login (or password change) of the same user never deadlock.
    private func updateUser(
        _ username: String, kind: AuditKind?, revoking reason: RevocationReason?, note: String? = nil, context: RequestContext,
        change: (Int64, Instant, Transaction) throws(PostgresError) -> Bool
    ) throws(BatonError) -> AccountChange {
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<AccountChange, BatonError> in
            guard let user = try transaction.query("SELECT id, username FROM users WHERE lower(username) = lower($1) FOR UPDATE", [username])
                .first.map({ (id: $0.int(0), name: $0.text(1)) })
            else { return .failure(.userNotFound(username)) }
            let now = clock.now()
            guard try change(user.id, now, transaction) else { return .success(AccountChange(username: user.name, changed: false, revoked: [])) }
            if let kind {
                try transaction.append(AuditEvent(kind: kind, userID: user.id, username: user.name, context: context), at: now)
            }
            guard let reason else { return .success(AccountChange(username: user.name, changed: true, revoked: [])) }
            var revoked: [ChainID] = []
            for chain in try unrevokedChains(ofUser: user.id, in: transaction)
            where try revoke(chain, username: user.name, reason: reason, note: note, context: context, now: now, in: transaction) {
                revoked.append(chain.id)
            }
            return .success(AccountChange(username: user.name, changed: true, revoked: revoked))
        }
        return try result.get()
    }
}

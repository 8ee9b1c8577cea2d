import BatonCore
import BatonStorage

extension TokenStore {
    /// The context recorded on events caused by an operator.
    package static let adminContext = RequestContext.admin

    /// Creates an account. Audits `user_created`.
    /// - Throws: `.userExists`, `.invalidArgument` (name, weak password).
    @discardableResult
    package func createUser(_ username: String, password: String, context: RequestContext = adminContext) throws(BatonError) -> Int64 {
        try LoginRequest.validateUsername(username)
        let hash = try hasher.hash(password)
        let result = try write { [self] connection throws(SQLiteError) -> Result<Int64, BatonError> in
            let now = clock.now()
            do throws(SQLiteError) {
                try connection.statement(
                    "INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES (?, ?, ?, ?)"
                ).execute([.text(username), .text(hash), .int(now.milliseconds), .int(now.milliseconds)])
            } catch where error.isUniqueViolation {
                let stored = try connection.statement("SELECT username FROM users WHERE username = ?").first([.text(username)]) { $0.text(0) }
                return .failure(.userExists(stored ?? username))
            }
            let id = connection.lastInsertRowID
            try AuditLog.append(AuditEvent(kind: .userCreated, userID: id, username: username, context: context), at: now, on: connection)
            return .success(id)
        }
        return try result.get()
    }

    /// Sets a new password and revokes every unrevoked chain of the user, whatever its age (`password_changed`).
    /// - Returns: the chains revoked.
    @discardableResult
    package func changePassword(_ username: String, to password: String, context: RequestContext = adminContext) throws(BatonError) -> [ChainID] {
        let hash = try hasher.hash(password)
        return try updateUser(username, kind: .passwordChanged, revoking: .passwordChanged, context: context) { id, now, connection throws(SQLiteError) in
            try connection.statement("UPDATE users SET password_hash = ?, password_changed_at = ? WHERE id = ?")
                .execute([.text(hash), .int(now.milliseconds), .int(id)])
            return true
        }.revoked
    }

    /// Disables (revoking every unrevoked chain, whatever its age, `user_disabled`) or re-enables an account. An
    /// account already in that state is left alone: no event, nothing revoked, `changed` false.
    @discardableResult
    package func setDisabled(_ username: String, _ disabled: Bool, context: RequestContext = adminContext) throws(BatonError) -> AccountChange {
        try updateUser(username, kind: disabled ? .userDisabled : .userEnabled, revoking: disabled ? .userDisabled : nil, context: context) { id, now, connection throws(SQLiteError) in
            try connection.statement("UPDATE users SET disabled_at = ? WHERE id = ? AND (disabled_at IS NULL) = ?")
                .execute([disabled ? .int(now.milliseconds) : .null, .int(id), .int(disabled ? 1 : 0)])
            return connection.changes == 1
        }
    }

    /// Revokes every unrevoked chain of a user, whatever its age (`admin`, with the operator's `note`).
    package func revokeChains(ofUser username: String, note: String? = nil, context: RequestContext = adminContext) throws(BatonError) -> [ChainID] {
        try updateUser(username, kind: nil, revoking: .admin, note: note, context: context) { _, _, _ throws(SQLiteError) in true }.revoked
    }

    /// Revokes one chain (`admin`, with the operator's `note`).
    /// - Returns: false when it was already revoked.
    package func revokeChain(_ id: ChainID, note: String? = nil, context: RequestContext = adminContext) throws(BatonError) -> Bool {
        let result = try write { [self] connection throws(SQLiteError) -> Result<Bool, BatonError> in
            guard let record = try ChainRecord.load(id, on: connection) else { return .failure(.chainNotFound(id)) }
            return .success(try revoke(record.head, username: record.username, reason: .admin, note: note, context: context,
                                       now: clock.now(), on: connection))
        }
        return try result.get()
    }

    /// Every account with its live chain count, by name.
    package func users() throws(BatonError) -> [UserSummary] {
        let now = clock.now()
        return try read { [self] connection throws(SQLiteError) in
            let rows = try connection.statement("SELECT id, username, created_at, disabled_at FROM users ORDER BY username")
                .all { (id: $0.int(0), name: $0.text(1), created: $0.int(2), disabled: !$0.isNull(3)) }
            var summaries: [UserSummary] = []
            for row in rows {
                let live = try liveChains(ofUser: row.id, now: now, on: connection).count
                summaries.append(UserSummary(id: row.id, username: row.name, createdAt: Instant(milliseconds: row.created),
                                             isDisabled: row.disabled, liveChains: live))
            }
            return summaries
        }
    }

    /// Finds the user and runs `change`; when it changed something (returned true), audits
    /// `kind` and revokes every unrevoked chain of the user with `reason`: the admin CLI does not know the server's lifetimes, so "live by the defaults" would miss chains a longer-configured server still accepts.
    private func updateUser(
        _ username: String, kind: AuditKind?, revoking reason: RevocationReason?, note: String? = nil, context: RequestContext,
        change: @escaping (Int64, Instant, Connection) throws(SQLiteError) -> Bool
    ) throws(BatonError) -> AccountChange {
        let result = try write { [self] connection throws(SQLiteError) -> Result<AccountChange, BatonError> in
            let now = clock.now()
            guard let user = try connection.statement("SELECT id, username FROM users WHERE username = ?")
                .first([.text(username)], { (id: $0.int(0), name: $0.text(1)) })
            else { return .failure(.userNotFound(username)) }
            guard try change(user.id, now, connection) else { return .success(AccountChange(username: user.name, changed: false, revoked: [])) }
            if let kind {
                try AuditLog.append(AuditEvent(kind: kind, userID: user.id, username: user.name, context: context), at: now, on: connection)
            }
            guard let reason else { return .success(AccountChange(username: user.name, changed: true, revoked: [])) }
            var revoked: [ChainID] = []
            for chain in try unrevokedChains(ofUser: user.id, on: connection)
            where try revoke(chain, username: user.name, reason: reason, note: note, context: context, now: now, on: connection) {
                revoked.append(chain.id)
            }
            return .success(AccountChange(username: user.name, changed: true, revoked: revoked))
        }
        return try result.get()
    }
}

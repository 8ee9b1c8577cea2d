import BatonCore
import BatonStorage

extension LineageBackend {
    /// Creates an account. Audits `user_created`.
    /// - Throws: `.userExists` (with the name as stored), `.invalidArgument` (name, weak password).
    @discardableResult
    package func createUser(_ username: String, password: String, context: RequestContext = .admin) throws(BatonError) -> Int64 {
        try LoginRequest.validateUsername(username)
        let hash = try hasher.hash(password)
        let result = try write { [clock] transaction throws(Transaction.Failure) -> Result<Int64, BatonError> in
            let now = clock.now()
            guard let id = try transaction.insertUser(username, passwordHash: hash, now: now) else {
                let stored = try transaction.user(named: username, forUpdate: false)?.username
                return .failure(.userExists(stored ?? username))
            }
            try transaction.record(AuditEvent(kind: .userCreated, userID: id, username: username, context: context), at: now)
            return .success(id)
        }
        return try result.get()
    }

    /// The operator sets a new password and revokes every unrevoked chain of the user,
    /// whatever its age (`password_changed`).
    /// - Returns: the chains revoked.
    /// - Throws: `.userNotFound`, `.invalidArgument` (weak password).
    @discardableResult
    package func changePassword(_ username: String, to password: String, context: RequestContext = .admin) throws(BatonError) -> [ChainID] {
        let hash = try hasher.hash(password)
        return try updateUser(username, kind: .passwordChanged, revoking: .passwordChanged, context: context) { id, now, transaction throws(Transaction.Failure) in
            try transaction.setPasswordHash(ofUser: id, hash, now: now)
            return true
        }.revoked
    }

    /// Disables (revoking every unrevoked chain, whatever its age, `user_disabled`) or
    /// re-enables an account. An account already in that state is left alone: no event,
    /// nothing revoked, `changed` false.
    /// - Throws: `.userNotFound`.
    @discardableResult
    package func setDisabled(_ username: String, _ disabled: Bool, context: RequestContext = .admin) throws(BatonError) -> AccountChange {
        try updateUser(username, kind: disabled ? .userDisabled : .userEnabled, revoking: disabled ? .userDisabled : nil, context: context) {
            id, now, transaction throws(Transaction.Failure) in
            try transaction.setDisabled(id, disabled, now: now)
        }
    }

    /// Revokes every unrevoked chain of a user, whatever its age (`admin`, with the operator's `note`).
    /// - Throws: `.userNotFound`.
    package func revokeChains(ofUser username: String, note: String? = nil, context: RequestContext = .admin) throws(BatonError) -> [ChainID] {
        try updateUser(username, kind: nil, revoking: .admin, note: note, context: context) { _, _, _ throws(Transaction.Failure) in true }.revoked
    }

    /// Finds the user and takes its row lock, then runs `change`; when it changed something
    /// (returned true), audits `kind` and revokes every unrevoked chain of the user with
    /// `reason`. Every one, not "live by the defaults": the admin CLI does not know the
    /// server's lifetimes, and would miss chains a longer-configured server still accepts.
    private func updateUser(
        _ username: String, kind: AuditKind?, revoking reason: RevocationReason?, note: String? = nil, context: RequestContext,
        change: @escaping (Int64, Instant, Transaction) throws(Transaction.Failure) -> Bool
    ) throws(BatonError) -> AccountChange {
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<AccountChange, BatonError> in
            guard let user = try transaction.user(named: username, forUpdate: true) else { return .failure(.userNotFound(username)) }
            let now = clock.now()
            guard try change(user.id, now, transaction) else { return .success(AccountChange(username: user.username, changed: false, revoked: [])) }
            if let kind {
                try transaction.record(AuditEvent(kind: kind, userID: user.id, username: user.username, context: context), at: now)
            }
            guard let reason else { return .success(AccountChange(username: user.username, changed: true, revoked: [])) }
            let revoked = try revokeUnrevokedChains(ofUser: user.id, username: user.username, reason: reason, note: note,
                                                    context: context, now: now, in: transaction)
            return .success(AccountChange(username: user.username, changed: true, revoked: revoked))
        }
        return try result.get()
    }
}

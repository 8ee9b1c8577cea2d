import BatonCore
import BatonStorage

extension PostgresStore {
    /// A password checked for a chain, before the locked transaction decides what it does.
    struct PasswordCheck {
        var presented: PresentedToken
        var userID: Int64
        var username: String
        var checkedHash: String
        var matches: Bool
    }

    /// Step-up (RFC 9470): the same answers as the SQLite store's `confirm`; the failure count
    /// and revocation at the 5th are decided under the chain row's lock.
    package func confirm(_ token: String, password: String, context: RequestContext = RequestContext()) throws(BatonError) -> Instant {
        guard !password.isEmpty else { throw .invalidArgument("password must not be empty") }
        let check = try checkPassword(presentedBy: token, password: password, operation: "confirm", context: context)
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<Instant, BatonError> in
            let now = clock.now()
            let decided = try decideConfirmation(check, operation: "confirm", context: context, now: now, in: transaction)
            guard case .success(let row) = decided else { return decided.map { _ in now } }
            try markConfirmed(row.head, now: now, in: transaction)
            try transaction.append(
                AuditEvent(kind: .stepUpSucceeded, userID: check.userID, username: row.username, chainID: row.head.id,
                           generation: row.head.generation, context: context, detail: ["operation": .string("confirm")]),
                at: now)
            return .success(now)
        }
        return try result.get()
    }

    /// The chain's user changes their own password: as the SQLite store's `changePassword`.
    package func changePassword(
        presentedBy token: String, current: String, new newPassword: String, context: RequestContext = RequestContext()
    ) throws(BatonError) -> PasswordChange {
        guard !current.isEmpty else { throw .invalidArgument("current_password must not be empty") }
        try PasswordRules.validate(newPassword, name: "new_password")
        let check = try checkPassword(presentedBy: token, password: current, operation: "password", context: context)
        let newHash = check.matches ? try hasher.hash(newPassword, for: HashClaimant(address: context.ip, chain: check.presented.chainID)) : ""
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<PasswordChange, BatonError> in
            let now = clock.now()
            // Lock order: the user's row, then chains (as login's R7 does). This change locks
            // several of the user's chains; taking the presenting chain first would let two
            // changes (or a change and a login) each hold a row the other waits for.
            try lockUser(check.userID, in: transaction)
            let decided = try decideConfirmation(check, operation: "password", context: context, now: now, in: transaction)
            guard case .success(let row) = decided else { return decided.map { _ in PasswordChange(authTime: now, revokedChains: []) } }
            let chain = row.head
            try transaction.query("UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3",
                                  [newHash, String(now.milliseconds), String(check.userID)])
            try markConfirmed(chain, now: now, in: transaction)
            try transaction.append(
                AuditEvent(kind: .stepUpSucceeded, userID: check.userID, username: row.username, chainID: chain.id,
                           generation: chain.generation, context: context, detail: ["operation": .string("password")]),
                at: now)
            var revoked: [ChainID] = []
            for other in try unrevokedChains(ofUser: check.userID, in: transaction) where other.id != chain.id {
                if try revoke(other, username: row.username, reason: .passwordChanged, context: context, now: now, in: transaction) {
                    revoked.append(other.id)
                }
            }
            try transaction.append(
                AuditEvent(kind: .passwordChanged, userID: check.userID, username: row.username, chainID: chain.id,
                           generation: chain.generation, context: context,
                           detail: ["by": .string("user"), "revoked_chains": .int(Int64(revoked.count))]),
                at: now)
            return .success(PasswordChange(authTime: now, revokedChains: revoked))
        }
        return try result.get()
    }

    /// The read half: the token must be one verify accepts, the chain's step-up limit must allow it, then argon2id.
    private func checkPassword(presentedBy token: String, password: String, operation: String, context: RequestContext) throws(BatonError) -> PasswordCheck {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let now = clock.now()
        let (found, standing) = try read { transaction throws(PostgresError) -> ((ChainRow, String)?, Standing) in
            guard let row = try ChainRow.load(presented.chainID, locking: false, in: transaction),
                  let hash = try transaction.query("SELECT password_hash FROM users WHERE id = $1", [String(row.head.userID)]).first?[0]
            else { return (nil, .unknown) }
            return ((row, hash), try ChainRow.standing(of: presented, in: row.head, in: transaction))
        }
        guard let (row, hash) = found else { throw .tokenInvalid }
        switch Rules.verify(standing, row.head, now: now, policy) {
        case .accepted: break
        case .rejected(let error): throw error
        case .forkDetected: throw try revokeForFork(presented, context: context)
        }
        // The chain's own limit, not the login throttle (docs/security.md, finding 4).
        if let wait = stepUps.admit(row.head.id, now: now) {
            let seconds = wait.wholeSecondsRoundedUp
            try audit(AuditEvent(kind: .stepUpFailed, userID: row.head.userID, username: row.username, chainID: row.head.id,
                                 generation: row.head.generation, context: context,
                                 detail: ["operation": .string(operation), "reason": .string(BatonError.tooManyAttempts(retryAfterSeconds: 0).code.rawValue),
                                          "retry_after": .int(seconds)]))
            throw .tooManyAttempts(retryAfterSeconds: seconds)
        }
        let matches = try stepUps.checkPassword(password, against: hash, with: hasher, chain: row.head.id, address: context.ip, admittedAt: now)
        return PasswordCheck(presented: presented, userID: row.head.userID, username: row.username, checkedHash: hash, matches: matches)
    }

    /// The write half, under the chain row's lock: applies `Rules.confirm`.
    private func decideConfirmation(
        _ check: PasswordCheck, operation: String, context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(PostgresError) -> Result<ChainRow, BatonError> {
        guard let row = try ChainRow.load(check.presented.chainID, locking: true, in: transaction) else { return .failure(.tokenInvalid) }
        let chain = row.head
        let standing = try ChainRow.standing(of: check.presented, in: chain, in: transaction)
        let currentHash = try transaction.query("SELECT password_hash FROM users WHERE id = $1", [String(chain.userID)]).first?[0]
        let matches = check.matches && currentHash == check.checkedHash
        switch Rules.confirm(standing, chain, passwordMatches: matches, now: now, policy) {
        case .confirmed:
            return .success(row)
        case .rejected(let error):
            return .failure(error)
        case .forkDetected:
            try recordFork(check.presented, row, context: context, now: now, in: transaction)
            return .failure(.chainRevoked(.forkDetected))
        case .failed(let failures):
            try recordFailedConfirmation(chain, row.username, failures: failures, operation: operation, context: context, now: now, in: transaction)
            return .failure(.wrongPassword)
        case .revoke(let failures):
            try recordFailedConfirmation(chain, row.username, failures: failures, operation: operation, context: context, now: now, in: transaction)
            try revoke(chain, username: row.username, reason: .confirmFailed, context: context, now: now, in: transaction)
            return .failure(.chainRevoked(.confirmFailed))
        }
    }

    private func recordFailedConfirmation(
        _ chain: ChainHead, _ username: String, failures: Int, operation: String, context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(PostgresError) {
        try transaction.query("UPDATE chains SET confirm_failures = $1 WHERE id = $2", [String(failures), String(chain.id.rawValue)])
        try transaction.append(
            AuditEvent(kind: .stepUpFailed, userID: chain.userID, username: username, chainID: chain.id, generation: chain.generation,
                       context: context,
                       detail: ["operation": .string(operation), "reason": .string(BatonError.invalidCredentials.code.rawValue),
                                "consecutive_failures": .int(Int64(failures))]),
            at: now)
    }

    /// A successful confirmation: `auth_time` now, the failure count back to 0.
    private func markConfirmed(_ chain: ChainHead, now: Instant, in transaction: Transaction) throws(PostgresError) {
        try transaction.query("UPDATE chains SET auth_time = $1, confirm_failures = 0 WHERE id = $2", [String(now.milliseconds), String(chain.id.rawValue)])
    }
}

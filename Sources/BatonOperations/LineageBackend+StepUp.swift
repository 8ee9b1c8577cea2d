import BatonCore
import BatonStorage

/// A password checked for a chain, before the write transaction decides what it does to the chain.
struct PasswordCheck {
    var presented: PresentedToken
    var userID: Int64
    var username: String
    /// The encoded hash the password was checked against (compared again in the transaction).
    var checkedHash: String
    var matches: Bool
}

extension LineageBackend {
    /// Step-up (RFC 9470): re-checks the password of the chain's user and, when it is right,
    /// sets the chain's `auth_time` to now. The token is not exchanged.
    ///
    /// The token must be one verify accepts (same answers otherwise). The chain's step-up limit
    /// applies (`StepUpLimit`; not the login throttle) and argon2id runs in the hasher's bounded
    /// queue, one check per chain at a time. A wrong password counts against the chain; the 5th
    /// consecutive one revokes it (`confirm_failed`). Answered after the change is durable.
    /// - Returns: the new `auth_time`.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_superseded, token_expired,
    ///   too_many_attempts, invalid_credentials, chain_revoked(confirm_failed) on the last
    ///   allowed failure, invalid_request (empty password), unavailable.
    package func confirm(_ token: String, password: String, context: RequestContext = RequestContext()) throws(BatonError) -> Instant {
        guard !password.isEmpty else { throw .invalidArgument("password must not be empty") }
        let check = try checkPassword(presentedBy: token, password: password, operation: "confirm", context: context)
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<Instant, BatonError> in
            let decided = try decideConfirmation(check, operation: "confirm", context: context, in: transaction)
            guard case .success(let (record, now)) = decided else { return decided.map { $0.1 } }
            try transaction.markConfirmed(record.head.id, now: now)
            try transaction.record(
                AuditEvent(kind: .stepUpSucceeded, userID: check.userID, username: record.username, chainID: record.head.id,
                           generation: record.head.generation, context: context, detail: ["operation": .string("confirm")]),
                at: now)
            return .success(now)
        }
        return try result.get()
    }

    /// The user behind the token changes their own password. The current password is a
    /// confirmation (limited, counted, revoking at the 5th failure like `confirm`). On success,
    /// in one transaction: the new hash, every other chain of the user revoked
    /// (`password_changed`, whatever its age), and this chain kept with `auth_time` now.
    /// - Throws: as `confirm`, and invalid_request when `newPassword` breaks the rules that
    ///   `baton admin user add` applies (`PasswordRules`).
    package func changePassword(
        presentedBy token: String, current: String, new newPassword: String, context: RequestContext = RequestContext()
    ) throws(BatonError) -> PasswordChange {
        guard !current.isEmpty else { throw .invalidArgument("current_password must not be empty") }
        try PasswordRules.validate(newPassword, name: "new_password")
        let check = try checkPassword(presentedBy: token, password: current, operation: "password", context: context)
        // Hashed here, before the transaction, and only for the right current password.
        let newHash = check.matches ? try hasher.hash(newPassword, for: HashClaimant(address: context.ip, chain: check.presented.chainID)) : ""
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<PasswordChange, BatonError> in
            // Lock order: the user's row, then chains (as login's R7 does). This change locks
            // several of the user's chains; taking the presenting chain first would let two
            // changes (or a change and a login) each hold a row the other waits for.
            try transaction.lockUser(check.userID)
            let decided = try decideConfirmation(check, operation: "password", context: context, in: transaction)
            guard case .success(let (record, now)) = decided else { return decided.map { PasswordChange(authTime: $0.1, revokedChains: []) } }
            let chain = record.head
            try transaction.setPasswordHash(ofUser: check.userID, newHash, now: now)
            try transaction.markConfirmed(chain.id, now: now)
            try transaction.record(
                AuditEvent(kind: .stepUpSucceeded, userID: check.userID, username: record.username, chainID: chain.id,
                           generation: chain.generation, context: context, detail: ["operation": .string("password")]),
                at: now)
            let revoked = try revokeUnrevokedChains(ofUser: check.userID, username: record.username, except: chain.id,
                                                    reason: .passwordChanged, context: context, now: now, in: transaction)
            try transaction.record(
                AuditEvent(kind: .passwordChanged, userID: check.userID, username: record.username, chainID: chain.id,
                           generation: chain.generation, context: context,
                           detail: ["by": .string("user"), "revoked_chains": .int(Int64(revoked.count))]),
                at: now)
            return .success(PasswordChange(authTime: now, revokedChains: revoked))
        }
        return try result.get()
    }

    /// The read half of a confirmation, outside any write transaction: the token must be one
    /// verify accepts, the chain's step-up limit must allow the attempt, then argon2id checks
    /// the password.
    private func checkPassword(presentedBy token: String, password: String, operation: String, context: RequestContext) throws(BatonError) -> PasswordCheck {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        let now = clock.now()
        let (found, standing) = try read { transaction throws(Transaction.Failure) -> ((ChainRecord, String)?, Standing) in
            guard let record = try transaction.chain(presented.chainID, forUpdate: false),
                  let user = try transaction.user(id: record.head.userID, forUpdate: false)
            else { return (nil, .unknown) }
            return ((record, user.passwordHash), try transaction.standing(of: presented, in: record.head))
        }
        guard let (record, hash) = found else { throw .tokenInvalid }
        if let refusal = proofRefusal(record, standing: standing, generation: presented.generation, context: context, now: now) { throw refusal }
        switch Rules.verify(standing, record.head, now: now, policy) {
        case .accepted: break
        case .rejected(let error): throw error
        case .forkDetected: throw try revokeForFork(presented, context: context)
        }
        // The chain's own limit, not the login throttle: a stranger's failed logins must not
        // stop the owner's step-up (docs/security.md, finding 4).
        if let wait = limits.stepUps.admit(record.head.id, now: now) {
            let seconds = wait.wholeSecondsRoundedUp
            try audit(AuditEvent(kind: .stepUpFailed, userID: record.head.userID, username: record.username, chainID: record.head.id,
                                 generation: record.head.generation, context: context,
                                 detail: ["operation": .string(operation), "reason": .string(BatonError.tooManyAttempts(retryAfterSeconds: 0).code.rawValue),
                                          "retry_after": .int(seconds)]))
            throw .tooManyConfirmations(retryAfterSeconds: seconds)
        }
        let matches = try limits.stepUps.checkPassword(password, against: hash, with: hasher, chain: record.head.id, address: context.ip, admittedAt: now)
        return PasswordCheck(presented: presented, userID: record.head.userID, username: record.username, checkedHash: hash, matches: matches)
    }

    /// The write half, against the committed (row-locked) chain: applies `Rules.confirm`. A
    /// failure is counted (and at the limit revokes) here; success, with the moment it was
    /// decided, is left to the caller.
    private func decideConfirmation(
        _ check: PasswordCheck, operation: String, context: RequestContext, in transaction: Transaction
    ) throws(Transaction.Failure) -> Result<(ChainRecord, Instant), BatonError> {
        guard let record = try transaction.chain(check.presented.chainID, forUpdate: true) else { return .failure(.tokenInvalid) }
        let now = clock.now()
        let chain = record.head
        let standing = try transaction.standing(of: check.presented, in: chain)
        // A bound chain's confirmation is state-changing: its proof is recorded durably, so a
        // captured one replayed elsewhere counts no failure and confirms nothing (finding 7).
        if let refusal = try durableReplayRefusal(record, standing: standing, generation: check.presented.generation,
                                                  context: context, now: now, in: transaction) {
            return .failure(refusal)
        }
        // A password checked against a hash that changed meanwhile is no longer the password.
        let currentHash = try transaction.user(id: chain.userID, forUpdate: false)?.passwordHash
        let matches = check.matches && currentHash == check.checkedHash
        switch Rules.confirm(standing, chain, passwordMatches: matches, now: now, policy) {
        case .confirmed:
            return .success((record, now))
        case .rejected(let error):
            return .failure(error)
        case .forkDetected:
            try recordFork(check.presented, record, context: context, now: now, in: transaction)
            return .failure(.chainRevoked(.forkDetected))
        case .failed(let failures):
            try recordFailedConfirmation(chain, record.username, failures: failures, operation: operation, context: context, now: now, in: transaction)
            return .failure(.wrongPassword)
        case .revoke(let failures):
            try recordFailedConfirmation(chain, record.username, failures: failures, operation: operation, context: context, now: now, in: transaction)
            try revoke(chain, username: record.username, reason: .confirmFailed, context: context, now: now, in: transaction)
            return .failure(.chainRevoked(.confirmFailed))
        }
    }

    private func recordFailedConfirmation(
        _ chain: ChainHead, _ username: String, failures: Int, operation: String, context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) {
        try transaction.setConfirmFailures(chain.id, failures)
        try transaction.record(
            AuditEvent(kind: .stepUpFailed, userID: chain.userID, username: username, chainID: chain.id, generation: chain.generation,
                       context: context,
                       detail: ["operation": .string(operation), "reason": .string(BatonError.invalidCredentials.code.rawValue),
                                "consecutive_failures": .int(Int64(failures))]),
            at: now)
    }
}

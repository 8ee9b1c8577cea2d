import BatonCore
import BatonStorage

extension LineageBackend {
    /// Step-up with an ID token (RFC 9470): the token presented must be one verify accepts
    /// (with its key's proof: the ID token's nonce was checked against that key), the ID
    /// token's identity must be linked to the chain's account, and the ID token is used once.
    /// The chain's `auth_time` becomes the provider's when that is later (an old provider
    /// session satisfies no recent `max_age`); the chain's step-up limit applies as to a password. A token of
    /// another identity is refused (`invalid_grant`) and audited as a failed step-up, without
    /// counting towards the password failures that revoke the chain.
    /// - Returns: the chain's new `auth_time`.
    package func confirm(_ token: String, identity: IdentityConfirmation, context: RequestContext = RequestContext()) throws(BatonError) -> Instant {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        let now = clock.now()
        let (found, standing) = try read { transaction throws(Transaction.Failure) -> (ChainRecord?, Standing) in
            guard let record = try transaction.chain(presented.chainID, forUpdate: false) else { return (nil, .unknown) }
            return (record, try transaction.standing(of: presented, in: record.head))
        }
        guard let found else { throw .tokenInvalid }
        if let refusal = proofRefusal(found, standing: standing, generation: presented.generation, context: context, now: now) { throw refusal }
        switch Rules.verify(standing, found.head, now: now, policy) {
        case .accepted: break
        case .rejected(let error): throw error
        case .forkDetected: throw try revokeForFork(presented, context: context)
        }
        if let wait = limits.stepUps.admit(found.head.id, now: now) { throw .tooManyConfirmations(retryAfterSeconds: wait.wholeSecondsRoundedUp) }
        return try write { [self] transaction throws(Transaction.Failure) -> Result<Instant, BatonError> in
            guard let record = try transaction.chain(presented.chainID, forUpdate: true) else { return .failure(.tokenInvalid) }
            let now = clock.now()
            let chain = record.head
            let standing = try transaction.standing(of: presented, in: chain)
            if let refusal = try durableReplayRefusal(record, standing: standing, generation: presented.generation, context: context, now: now, in: transaction) {
                return .failure(refusal)
            }
            switch Rules.verify(standing, chain, now: now, policy) {
            case .accepted: break
            case .rejected(let error): return .failure(error)
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, in: transaction)
                return .failure(.chainRevoked(.forkDetected))
            }
            let detail: [String: JSONValue] = ["operation": .string("confirm"), "method": .string("id_token"), "issuer": .string(identity.issuer)]
            guard try transaction.linkedUser(issuer: identity.issuer, subject: identity.subject) == chain.userID else {
                try transaction.record(AuditEvent(kind: .stepUpFailed, userID: chain.userID, username: record.username, chainID: chain.id,
                                                  generation: chain.generation, context: context,
                                                  detail: detail.merging(["reason": .string("identity_not_linked")]) { $1 }), at: now)
                return .failure(.invalidGrant(failure: "identity_not_linked", description: "The ID token's identity is not linked to this session's account."))
            }
            for digest in identity.replayDigests where !(try transaction.recordProof(digest, keepUntil: identity.keepUntil, now: now)) {
                return .failure(.invalidGrant(failure: "replayed", description: "The subject token was already exchanged."))
            }
            // Never earlier than the chain's own: an older provider session takes nothing away.
            let authTime = max(min(identity.authTime, now), chain.authTime)
            try transaction.markConfirmed(chain.id, now: authTime)
            try transaction.record(AuditEvent(kind: .stepUpSucceeded, userID: chain.userID, username: record.username, chainID: chain.id,
                                              generation: chain.generation, context: context, detail: detail), at: now)
            return .success(authTime)
        }.get()
    }
}

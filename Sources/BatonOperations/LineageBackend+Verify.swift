import BatonCore
import BatonStorage

extension LineageBackend {
    /// R5: whether `token` grants access now, and to whom.
    ///
    /// Answers from the store's memory when it can prove the row current (`recalledChain`),
    /// else reads, without waiting for writers; the first verify of a head marks it presented
    /// for R3a (`notePresented`, each store's way). Presenting an R3a-replaced sibling revokes
    /// the chain (R4), decided again in a write transaction. The chain's `auth_time` is read
    /// with the head, from the same committed row that a confirmation writes before it answers.
    /// - Parameter maxAge: RFC 9470 `max_age`: how recent the chain's last authentication must be.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_superseded, token_expired,
    ///   insufficient_user_authentication (only with `maxAge`), unavailable.
    package func verify(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        // Memory first (no lock, no read: docs/design.md, "Verify from memory"), else the database.
        if let answer = try answerFromMemory(presented, maxAge: maxAge, context: context) { return answer }
        let now = clock.now()
        let (found, standing) = try readHead(of: presented, context: context, now: now)
        guard let record = found else { throw .tokenInvalid }
        if let refusal = proofRefusal(record, standing: standing, generation: presented.generation, context: context, now: now) { throw refusal }
        let chain = record.head
        switch Rules.verify(standing, chain, now: now, policy, maxAge: maxAge) {
        case .accepted:
            // A verify that authorizes a state-changing request (the gateway's X-Original-Method:
            // POST...) records its proof durably, like an exchange: a captured app request
            // replayed to another instance or after a restart is refused (issue 28, finding 4).
            if context.authorizesStateChange, chain.isBound,
               let refusal = try write({ [self] transaction throws(Transaction.Failure) -> BatonError? in
                   try durableReplayRefusal(record, standing: standing, generation: presented.generation, context: context, now: now, in: transaction)
               }) {
                throw refusal
            }
            return Self.verification(of: record)
        case .rejected(let error):
            throw error
        case .forkDetected:
            throw try revokeForFork(presented, context: context)
        }
    }

    /// Verify's answer when memory alone gives it, without a read, a write or a lock wait: for
    /// the caller on an event loop, which must never wait for the database. Nil when `verify`
    /// is needed (a chain not remembered, a head not yet marked presented, a consumed or
    /// replaced token, a state-changing request of a bound chain): the caller then runs
    /// `verify` where waiting is allowed. A nil answer has changed nothing and recorded nothing,
    /// so `verify` decides as if this had not been asked.
    /// - Throws: what `verify` throws for a remembered head (token_invalid for a forged token).
    package func verifyFromMemory(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification? {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        return try answerFromMemory(presented, maxAge: maxAge, context: context)
    }

    /// `verifyFromMemory` for a token already authenticated.
    private func answerFromMemory(_ presented: PresentedToken, maxAge: Duration?, context: RequestContext) throws(BatonError) -> Verification? {
        guard let record = recalledHead(of: presented) else { return nil }
        let chain = record.head
        // Its proof is recorded durably, in a write transaction after a read: `verify`'s path.
        if context.authorizesStateChange, chain.isBound { return nil }
        let now = clock.now()
        if let refusal = proofRefusal(record, standing: .head, generation: presented.generation, context: context, now: now) { throw refusal }
        switch Rules.verify(.head, chain, now: now, policy, maxAge: maxAge) {
        case .accepted:
            return Self.verification(of: record)
        case .rejected(let error):
            throw error
        case .forkDetected:
            return nil  // never for a head; a revocation is `verify`'s
        }
    }

    /// What an accepted verify answers about `record`'s chain.
    private static func verification(of record: ChainRecord) -> Verification {
        let chain = record.head
        return Verification(userID: chain.userID, username: record.username, chainID: chain.id, deviceID: chain.deviceID,
                            expiresAt: chain.expiresAt, authTime: chain.authTime)
    }

    /// The common case from memory: `presented` is the head of a remembered row that is
    /// already marked presented (a head not yet marked is read, so the mark is queued once).
    /// A token that is not the remembered head is read too (lineage, R4).
    private func recalledHead(of presented: PresentedToken) -> ChainRecord? {
        guard let record = recalledChain(presented.chainID), record.head.presented,
              presented.generation == record.head.generation, presented.hash.matches(record.head.hash) else { return nil }
        return record
    }

    /// The chain's row and where `presented` stands in it, from the database; marks the head
    /// presented (R3a) on its first verify, and offers the row to the store's memory.
    private func readHead(of presented: PresentedToken, context: RequestContext, now: Instant) throws(BatonError) -> (ChainRecord?, Standing) {
        try readRemembering { [self] transaction, remember throws(Transaction.Failure) -> (ChainRecord?, Standing) in
            guard let record = try transaction.chain(presented.chainID, forUpdate: false) else { return (nil, .unknown) }
            let standing = try transaction.standing(of: presented, in: record.head)
            // A request refused for its proof (below) must not mark the head presented: that
            // would take R3a away from the key holder.
            if standing == .head, !record.head.presented, keyRefusal(record, standing: standing, context: context, now: now) == nil {
                try notePresented(record.head, reading: transaction)
                // Remembered as marked: the mark is this process's to write (or retry), and its
                // commit changes nothing else in the row, so the stores do not count it as a
                // change and the next verify answers from memory (docs/design.md, "The mark").
                var marked = record
                marked.head.presented = true
                remember(marked)
            } else {
                remember(record)
            }
            return (record, standing)
        }
    }

    /// Re-checks in a write transaction (row-locked) that `presented` is still a replaced
    /// sibling of a live chain, and revokes the chain (fork_detected). Returns the answer to give.
    func revokeForFork(_ presented: PresentedToken, context: RequestContext) throws(BatonError) -> BatonError {
        try write { [self] transaction throws(Transaction.Failure) -> BatonError in
            guard let record = try transaction.chain(presented.chainID, forUpdate: true) else { return .tokenInvalid }
            let now = clock.now()
            let standing = try transaction.standing(of: presented, in: record.head)
            switch Rules.verify(standing, record.head, now: now, policy) {
            case .accepted: return .tokenInvalid  // unreachable: a sibling never becomes the head again
            case .rejected(let error): return error
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, in: transaction)
                return .chainRevoked(.forkDetected)
            }
        }
    }
}

import BatonCore
import BatonStorage

extension LineageBackend {
    /// R2/R3/R3a/R4: exchanges `token` for its successor, exactly once, across every process
    /// sharing the database: decided in one write transaction against the committed chain
    /// (row-locked where the store locks rows), answered after it is durable. A forged token
    /// never reaches a transaction.
    /// - Parameter context: the caller; `context.deviceID` (X-Device-Id) enables R3a.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_reused, exchange_window_closed, unavailable.
    package func exchange(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        return try write(exchangeTransaction(presented, context: context)).get()
    }

    /// `exchange`, answered through `then` exactly once: on the writer's thread after the
    /// commit where the store has one (`writesWithoutWaiting`), so the caller (an event loop)
    /// never waits; otherwise before this returns.
    package func exchange(_ token: String, context: RequestContext, then: @escaping @Sendable (Result<TokenBundle, BatonError>) -> Void) {
        let presented: PresentedToken
        do throws(BatonError) {
            guard let authenticated = try authenticate(token) else { return then(.failure(.tokenInvalid)) }
            presented = authenticated
        } catch {
            return then(.failure(error))
        }
        write(exchangeTransaction(presented, context: context)) { result in then(result.flatMap { $0 }) }
    }

    /// The exchange's transaction for an authenticated token: its decision (`Rules.exchange`)
    /// and writes, as the result the caller answers with.
    private func exchangeTransaction(_ presented: PresentedToken, context: RequestContext)
        -> (Transaction) throws(Transaction.Failure) -> Result<TokenBundle, BatonError> {
        // The successor, minted here on the caller's thread so no transaction waits on
        // randomness and MACs. Both outcomes that issue use this generation: R2 advances the
        // head (presented = head), R3a replaces the head (presented = head's parent).
        // R2 under rotation: the successor is made with the newest key, whatever key made `token`.
        let successor = mintingCodec().issue(chainID: presented.chainID, generation: presented.generation + 1)
        return { [self] transaction throws(Transaction.Failure) -> Result<TokenBundle, BatonError> in
            guard let record = try transaction.chain(presented.chainID, forUpdate: true) else { return .failure(.tokenInvalid) }
            let now = clock.now()  // read after the lock: the decision is made at this moment
            let chain = record.head
            let standing = try transaction.standing(of: presented, in: chain)
            // DPoP: a bound chain's key first, before any rule (R3/R3a included) looks at the token.
            if let refusal = try proofRefusal(record, standing: standing, generation: presented.generation, context: context, now: now, in: transaction) {
                return .failure(refusal)
            }
            switch Rules.exchange(standing, chain, token: presented, context: context, now: now, policy) {
            case .advance:
                try transaction.insertLineage(of: chain, end: "exchanged", context: context, now: now)
                let bundle = try installHead(successor, of: chain, attempt: context.exchangeAttempt, usedFrom: context, now: now, in: transaction)
                try transaction.record(
                    AuditEvent(kind: .exchanged, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: bundle.generation, context: context),
                    at: now, useMarked: true)
                return .success(bundle)
            case .retry:
                // R3a: the head's response was lost. Revoke the unused head; its replacement
                // takes the same generation, so the chain still has one head.
                try transaction.insertLineage(of: chain, end: "replaced", context: context, now: now)
                let bundle = try installHead(successor, of: chain, attempt: context.exchangeAttempt, usedFrom: context, now: now, in: transaction)
                try transaction.record(
                    AuditEvent(kind: .exchangeRetried, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: bundle.generation, context: context,
                               detail: ["retried_generation": .int(Int64(presented.generation)),
                                        "replaced_generation": .int(Int64(chain.generation))]),
                    at: now, useMarked: true)
                return .success(bundle)
            case .attemptSuperseded(let headAttempt):
                // R3b: a late attempt the client gave up on. The head it would replace is the one
                // the client holds (or will get from its newer attempt): nothing is written.
                return .failure(.exchangeAttemptSuperseded(headAttempt: headAttempt))
            case .reuse(let original):
                try transaction.record(
                    AuditEvent(kind: .reuseDetected, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: presented.generation, context: context,
                               detail: AuditEvent.reuseDetail(original: original, attempt: context, at: now, generation: presented.generation,
                                                              chainDevice: chain.deviceID)),
                    at: now)
                try revoke(chain, username: record.username, reason: .reuseDetected, context: context, now: now, in: transaction)
                return .failure(.tokenReused)
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, in: transaction)
                return .failure(.chainRevoked(.forkDetected))
            case .rejected(let error):
                try markPresented(chain, standing: standing, in: transaction)
                return .failure(error)
            }
        }
    }

    /// R6: revokes the chain of the presented head (expired or not). A consumed token is
    /// token_superseded and revokes nothing.
    package func logout(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        let failure = try write { [self] transaction throws(Transaction.Failure) -> BatonError? in
            guard let record = try transaction.chain(presented.chainID, forUpdate: true) else { return .tokenInvalid }
            let now = clock.now()
            let standing = try transaction.standing(of: presented, in: record.head)
            if let refusal = try proofRefusal(record, standing: standing, generation: presented.generation, context: context, now: now, in: transaction) {
                return refusal
            }
            switch Rules.logout(standing, record.head, now: now, policy) {
            case .revoke:
                try revoke(record.head, username: record.username, reason: .logout, context: context, now: now, in: transaction)
                return nil
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, in: transaction)
                return .chainRevoked(.forkDetected)
            case .rejected(let error):
                try markPresented(record.head, standing: standing, in: transaction)
                return error
            }
        }
        if let failure { throw failure }
    }
}

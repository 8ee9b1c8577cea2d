import BatonCore
import BatonStorage

extension PostgresStore {
    /// R2/R3/R3a/R4: exchanges `token` for its successor, exactly once, across every instance:
    /// decided under the chain row's lock against the committed state, answered after COMMIT.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_reused, exchange_window_closed, unavailable.
    package func exchange(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let successor = codec!.issue(chainID: presented.chainID, generation: presented.generation + 1)
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<TokenBundle, BatonError> in
            guard let row = try ChainRow.load(presented.chainID, locking: true, in: transaction) else { return .failure(.tokenInvalid) }
            let now = clock.now()  // read after the lock: the decision is made at this moment
            let chain = row.head
            let standing = try ChainRow.standing(of: presented, in: chain, in: transaction)
            switch Rules.exchange(standing, chain, token: presented, context: context, now: now, policy) {
            case .advance:
                try recordLineage(chain, end: "exchanged", context: context, now: now, in: transaction)
                let bundle = try installHead(successor, of: chain, now: now, in: transaction)
                try transaction.append(
                    AuditEvent(kind: .exchanged, userID: chain.userID, username: row.username, chainID: chain.id,
                               generation: bundle.generation, context: context),
                    at: now)
                return .success(bundle)
            case .retry:
                // R3a: the head's response was lost; its replacement takes the same generation.
                try recordLineage(chain, end: "replaced", context: context, now: now, in: transaction)
                let bundle = try installHead(successor, of: chain, now: now, in: transaction)
                try transaction.append(
                    AuditEvent(kind: .exchangeRetried, userID: chain.userID, username: row.username, chainID: chain.id,
                               generation: bundle.generation, context: context,
                               detail: ["retried_generation": .int(Int64(presented.generation)),
                                        "replaced_generation": .int(Int64(chain.generation))]),
                    at: now)
                return .success(bundle)
            case .reuse(let original):
                try transaction.append(
                    AuditEvent(kind: .reuseDetected, userID: chain.userID, username: row.username, chainID: chain.id,
                               generation: presented.generation, context: context,
                               detail: AuditEvent.reuseDetail(original: original, attempt: context, at: now, generation: presented.generation,
                                                              chainDevice: chain.deviceID)),
                    at: now)
                try revoke(chain, username: row.username, reason: .reuseDetected, context: context, now: now, in: transaction)
                return .failure(.tokenReused)
            case .forkDetected:
                try recordFork(presented, row, context: context, now: now, in: transaction)
                return .failure(.chainRevoked(.forkDetected))
            case .rejected(let error):
                if standing == .head { try markHeadPresented(chain, in: transaction) }
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// R6: revokes the chain of the presented head (expired or not).
    package func logout(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let failure = try transaction { [self] transaction throws(PostgresError) -> BatonError? in
            guard let row = try ChainRow.load(presented.chainID, locking: true, in: transaction) else { return .tokenInvalid }
            let now = clock.now()
            let standing = try ChainRow.standing(of: presented, in: row.head, in: transaction)
            switch Rules.logout(standing, row.head, now: now, policy) {
            case .revoke:
                try revoke(row.head, username: row.username, reason: .logout, context: context, now: now, in: transaction)
                return nil
            case .forkDetected:
                try recordFork(presented, row, context: context, now: now, in: transaction)
                return .chainRevoked(.forkDetected)
            case .rejected(let error):
                if standing == .head { try markHeadPresented(row.head, in: transaction) }
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Moves the head into the lineage table as it leaves head state.
    private func recordLineage(_ chain: ChainHead, end: String, context: RequestContext, now: Instant, in transaction: Transaction) throws(PostgresError) {
        try transaction.query("""
            INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            """, [String(chain.id.rawValue), String(chain.generation), ByteaText.encode(chain.hash), String(chain.issuedAt.milliseconds),
                  String(now.milliseconds), end, context.ip, context.userAgent, context.deviceID])
    }

    /// R3a's "presented" mark: the head was seen by the server.
    func markHeadPresented(_ chain: ChainHead, in transaction: Transaction) throws(PostgresError) {
        guard !chain.presented else { return }
        try transaction.query("UPDATE chains SET head_presented = true WHERE id = $1", [String(chain.id.rawValue)])
    }
}

import BatonCore
import BatonStorage

extension TokenStore {
    /// R2/R3/R3a/R4: exchanges `token` for its successor, exactly once.
    ///
    /// Decided and applied on the writer, inside the batch transaction, against the committed
    /// state; answered after the batch is durable. A forged token never reaches the writer.
    /// - Parameter context: the caller; `context.deviceID` (X-Device-Id) enables R3a.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_reused, exchange_window_closed.
    package func exchange(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        // The successor, minted here on the caller's thread so the single writer spends no time
        // on randomness and MACs. Both outcomes that issue use this generation: R2 advances the
        // head (presented = head), R3a replaces the head (presented = head's parent).
        let successor = codec!.issue(chainID: presented.chainID, generation: presented.generation + 1)
        let result = try write { [self] connection throws(SQLiteError) -> Result<TokenBundle, BatonError> in
            let now = clock.now()
            guard let record = try ChainRecord.load(presented.chainID, on: connection) else { return .failure(.tokenInvalid) }
            let chain = record.head
            let standing = try ChainRecord.standing(of: presented, in: chain, on: connection)
            switch Rules.exchange(standing, chain, token: presented, context: context, now: now, policy) {
            case .advance:
                try recordLineage(chain, end: "exchanged", context: context, now: now, on: connection)
                let bundle = try installHead(successor, of: chain, now: now, on: connection)
                try AuditLog.append(
                    AuditEvent(kind: .exchanged, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: bundle.generation, context: context),
                    at: now, on: connection)
                return .success(bundle)
            case .retry:
                // R3a: the head's response was lost. Revoke the unused head; its replacement
                // takes the same generation, so the chain still has one head.
                try recordLineage(chain, end: "replaced", context: context, now: now, on: connection)
                let bundle = try installHead(successor, of: chain, now: now, on: connection)
                try AuditLog.append(
                    AuditEvent(kind: .exchangeRetried, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: bundle.generation, context: context,
                               detail: ["retried_generation": .int(Int64(presented.generation)),
                                        "replaced_generation": .int(Int64(chain.generation))]),
                    at: now, on: connection)
                return .success(bundle)
            case .reuse(let original):
                try AuditLog.append(
                    AuditEvent(kind: .reuseDetected, userID: chain.userID, username: record.username, chainID: chain.id,
                               generation: presented.generation, context: context,
                               detail: AuditEvent.reuseDetail(original: original, attempt: context, at: now, generation: presented.generation,
                                                        chainDevice: chain.deviceID)),
                    at: now, on: connection)
                try revoke(chain, username: record.username, reason: .reuseDetected, context: context, now: now, on: connection)
                return .failure(.tokenReused)
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, on: connection)
                return .failure(.chainRevoked(.forkDetected))
            case .rejected(let error):
                if standing == .head { try markHeadPresented(chain, on: connection) }
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// R6: revokes the chain of the presented head (expired or not). A consumed token is
    /// token_superseded and revokes nothing.
    package func logout(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let failure = try write { [self] connection throws(SQLiteError) -> BatonError? in
            let now = clock.now()
            guard let record = try ChainRecord.load(presented.chainID, on: connection) else { return .tokenInvalid }
            let standing = try ChainRecord.standing(of: presented, in: record.head, on: connection)
            switch Rules.logout(standing, record.head, now: now, policy) {
            case .revoke:
                try revoke(record.head, username: record.username, reason: .logout, context: context, now: now, on: connection)
                return nil
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, on: connection)
                return .chainRevoked(.forkDetected)
            case .rejected(let error):
                if standing == .head { try markHeadPresented(record.head, on: connection) }
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Moves the head into the lineage table as it leaves head state.
    private func recordLineage(_ chain: ChainHead, end: String, context: RequestContext, now: Instant, on connection: Connection) throws(SQLiteError) {
        try connection.statement("""
            INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute([
                .int(chain.id.rawValue), .int(Int64(chain.generation)), .blob(chain.hash), .int(chain.issuedAt.milliseconds),
                .int(now.milliseconds), .text(end), .optional(context.ip), .optional(context.userAgent), .optional(context.deviceID),
            ])
    }

    private func markHeadPresented(_ chain: ChainHead, on connection: Connection) throws(SQLiteError) {
        guard !chain.presented else { return }
        try connection.statement("UPDATE chains SET head_presented = 1 WHERE id = ?").execute([.int(chain.id.rawValue)])
    }
}

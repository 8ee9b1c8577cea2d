import BatonCore
import BatonStorage

extension TokenStore {
    /// R5: whether `token` grants access now, and to whom.
    ///
    /// Reads only (a WAL reader, no waiting for the writer). The first verify of a head queues
    /// "presented" for R3a without waiting for it to be written (docs/design.md explains why
    /// that is safe). Presenting an R3a-revoked sibling revokes the chain (R4) and waits for it.
    ///
    /// The chain's `auth_time` is read with the head, from the same committed row that
    /// `/v1/confirm` writes before it answers, so it is never stale.
    /// - Parameter maxAge: RFC 9470 `max_age`: how recent the chain's last authentication must be.
    /// - Throws: token_invalid, chain_revoked, session_expired, token_superseded, token_expired,
    ///   insufficient_user_authentication (only with `maxAge`).
    package func verify(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let now = clock.now()
        let (record, standing) = try read { connection throws(SQLiteError) -> (ChainRecord?, Standing) in
            guard let record = try ChainRecord.load(presented.chainID, on: connection) else { return (nil, .unknown) }
            return (record, try ChainRecord.standing(of: presented, in: record.head, on: connection))
        }
        guard let record else { throw .tokenInvalid }
        let chain = record.head
        if standing == .head, !chain.presented {
            writer.markPresented(chain.id, .init(generation: chain.generation, hash: chain.hash))
        }
        switch Rules.verify(standing, chain, now: now, policy, maxAge: maxAge) {
        case .accepted:
            return Verification(
                userID: chain.userID, username: record.username, chainID: chain.id, deviceID: chain.deviceID,
                expiresAt: chain.expiresAt, authTime: chain.authTime)
        case .rejected(let error):
            throw error
        case .forkDetected:
            throw try revokeForFork(presented, context: context)
        }
    }

    /// Re-checks on the writer that `presented` is still a replaced sibling of a live chain,
    /// and revokes the chain (fork_detected). Returns the answer to give.
    func revokeForFork(_ presented: PresentedToken, context: RequestContext) throws(BatonError) -> BatonError {
        try write { [self] connection throws(SQLiteError) -> BatonError in
            let now = clock.now()
            guard let record = try ChainRecord.load(presented.chainID, on: connection) else { return .tokenInvalid }
            let standing = try ChainRecord.standing(of: presented, in: record.head, on: connection)
            switch Rules.verify(standing, record.head, now: now, policy) {
            case .accepted: return .tokenInvalid  // unreachable: a sibling never becomes the head again
            case .rejected(let error): return error
            case .forkDetected:
                try recordFork(presented, record, context: context, now: now, on: connection)
                return .chainRevoked(.forkDetected)
            }
        }
    }

    /// R4: audit fork_detected and revoke the chain.
    func recordFork(_ presented: PresentedToken, _ record: ChainRecord, context: RequestContext, now: Instant, on connection: Connection) throws(SQLiteError) {
        let chain = record.head
        try AuditLog.append(
            AuditEvent(kind: .forkDetected, userID: chain.userID, username: record.username, chainID: chain.id,
                       generation: presented.generation, context: context,
                       detail: ["presented_generation": .int(Int64(presented.generation)),
                                "head_generation": .int(Int64(chain.generation)),
                                "chain_device_id": .string(chain.deviceID)]),
            at: now, on: connection)
        try revoke(chain, username: record.username, reason: .forkDetected, context: context, now: now, on: connection)
    }

    /// The chain `token` belongs to when its MAC verifies (whatever its state), for logging a
    /// refused request; nil for a forged or malformed token, or a store opened without a key.
    package func chainID(ofToken token: String) -> ChainID? {
        codec?.authenticate(token)?.chainID
    }
}

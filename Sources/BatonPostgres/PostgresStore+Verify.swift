import BatonCore
import BatonStorage

extension PostgresStore {
    /// R5: whether `token` grants access now, and to whom. Reads without a row lock; the first
    /// verify of a head writes "presented" (R3a) before answering, conditional on the head
    /// still being that token, so a concurrent exchange is never undone.
    /// - Throws: as the SQLite store's `verify`.
    package func verify(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification {
        guard let presented = authenticate(token) else { throw .tokenInvalid }
        let now = clock.now()
        let (row, standing) = try read { transaction throws(PostgresError) -> (ChainRow?, Standing) in
            guard let row = try ChainRow.load(presented.chainID, locking: false, in: transaction) else { return (nil, .unknown) }
            let standing = try ChainRow.standing(of: presented, in: row.head, in: transaction)
            if standing == .head, !row.head.presented {
                try transaction.query("UPDATE chains SET head_presented = true WHERE id = $1 AND head_generation = $2 AND head_hash = $3",
                                      [String(row.head.id.rawValue), String(row.head.generation), ByteaText.encode(row.head.hash)])
            }
            return (row, standing)
        }
        guard let row else { throw .tokenInvalid }
        let chain = row.head
        switch Rules.verify(standing, chain, now: now, policy, maxAge: maxAge) {
        case .accepted:
            return Verification(userID: chain.userID, username: row.username, chainID: chain.id, deviceID: chain.deviceID,
                                expiresAt: chain.expiresAt, authTime: chain.authTime)
        case .rejected(let error):
            throw error
        case .forkDetected:
            throw try revokeForFork(presented, context: context)
        }
    }

    /// Re-checks under the row lock that `presented` is still a replaced sibling of a live
    /// chain, and revokes the chain (fork_detected). Returns the answer to give.
    func revokeForFork(_ presented: PresentedToken, context: RequestContext) throws(BatonError) -> BatonError {
        try transaction { [self] transaction throws(PostgresError) -> BatonError in
            guard let row = try ChainRow.load(presented.chainID, locking: true, in: transaction) else { return .tokenInvalid }
            let now = clock.now()
            let standing = try ChainRow.standing(of: presented, in: row.head, in: transaction)
            switch Rules.verify(standing, row.head, now: now, policy) {
            case .accepted: return .tokenInvalid  // unreachable: a sibling never becomes the head again
            case .rejected(let error): return error
            case .forkDetected:
                try recordFork(presented, row, context: context, now: now, in: transaction)
                return .chainRevoked(.forkDetected)
            }
        }
    }
}

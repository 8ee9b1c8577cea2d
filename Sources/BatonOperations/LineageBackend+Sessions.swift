import BatonCore
import BatonStorage

extension LineageBackend {
    /// The live sessions of the token's user, newest first, the token's own marked current.
    /// The token must be one verify accepts (same answers otherwise).
    package func sessions(presentedBy token: String, context: RequestContext = RequestContext()) throws(BatonError) -> [Session] {
        let verified = try verify(token, context: context)
        return try sessions(ofUserID: verified.userID, current: verified.chainID)
    }

    /// The user's live sessions, newest first (`baton admin user show`).
    /// - Throws: `.userNotFound`.
    package func sessions(ofUser username: String) throws(BatonError) -> [Session] {
        let user = try read { transaction throws(Transaction.Failure) in try transaction.user(named: username, forUpdate: false) }
        guard let user else { throw .userNotFound(username) }
        return try sessions(ofUserID: user.id, current: nil)
    }

    private func sessions(ofUserID userID: Int64, current: ChainID?) throws(BatonError) -> [Session] {
        let now = clock.now()
        return try read { [policy] transaction throws(Transaction.Failure) -> [Session] in
            var sessions: [Session] = []
            for chain in try transaction.unrevokedChains(ofUser: userID, forUpdate: false) where chain.isLive(at: now, policy) {
                let activity = try transaction.sessionActivity(of: chain.id)
                sessions.append(Session(
                    chainID: chain.id, deviceID: chain.deviceID, deviceClass: chain.deviceClass, deviceName: activity.deviceName,
                    createdAt: chain.createdAt, lastUsedAt: max(activity.lastUsedAt ?? chain.createdAt, chain.authTime),
                    lastAddress: activity.lastAddress, lastUserAgent: activity.lastUserAgent, isCurrent: chain.id == current,
                    isBound: chain.isBound))
            }
            return sessions.reversed()  // oldest first from the store; newest first for people
        }
    }

    /// Signs out one session of the token's user (`signed_out`, audited with the acting chain).
    /// A critical operation: the token's chain must have authenticated within `maxAge` (RFC 9470
    /// step-up), so a thief with a fresh token cannot sign the owner out. Signing out the
    /// token's own session is a logout.
    /// - Throws: as verify with `maxAge`; `.sessionNotFound` for a session that is not the
    ///   user's or no longer live, the same answer whether or not it exists.
    package func signOut(session target: ChainID, presentedBy token: String, maxAge: Duration,
                         context: RequestContext = RequestContext()) throws(BatonError) {
        _ = try signOut(presentedBy: token, maxAge: maxAge, context: context) { user, _, now, transaction throws(Transaction.Failure) in
            guard let record = try transaction.chain(target, forUpdate: true), record.head.userID == user,
                  record.head.revocation == nil, record.head.isLive(at: now, self.policy)
            else { return nil }
            return [record.head]
        }
    }

    /// Signs out every other live session of the token's user; returns them. Critical, as `signOut`.
    package func signOutOtherSessions(presentedBy token: String, maxAge: Duration,
                                      context: RequestContext = RequestContext()) throws(BatonError) -> [ChainID] {
        try signOut(presentedBy: token, maxAge: maxAge, context: context) { user, acting, _, transaction throws(Transaction.Failure) in
            try transaction.unrevokedChains(ofUser: user, forUpdate: true).filter { $0.id != acting }
        }
    }

    /// The shared half of a sign-out: verify with `maxAge` (a quick refusal), then in one write
    /// transaction, in the lock order (the user's row, then chains), the acting chain checked
    /// again and `doomed`'s chains revoked. `doomed` returns nil for "no such session".
    private func signOut(
        presentedBy token: String, maxAge: Duration, context: RequestContext,
        doomed: @escaping (_ user: Int64, _ acting: ChainID, _ now: Instant, Transaction) throws(Transaction.Failure) -> [ChainHead]?
    ) throws(BatonError) -> [ChainID] {
        guard let presented = try authenticate(token) else { throw .tokenInvalid }
        let verified = try verify(token, maxAge: maxAge, context: context)
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<[ChainID], BatonError> in
            try transaction.lockUser(verified.userID)
            guard let acting = try transaction.chain(verified.chainID, forUpdate: true) else { return .failure(.tokenInvalid) }
            let now = clock.now()
            let standing = try transaction.standing(of: presented, in: acting.head)
            // A sign-out's proof is recorded durably: replayed to another instance it would sign
            // out sessions created after the capture (issue 28, finding 7).
            if let refusal = try durableReplayRefusal(acting, standing: standing, generation: presented.generation, context: context,
                                                      now: now, in: transaction) {
                return .failure(refusal)
            }
            switch Rules.verify(standing, acting.head, now: now, policy, maxAge: maxAge) {
            case .accepted: break
            case .rejected(let error): return .failure(error)
            case .forkDetected:
                try recordFork(presented, acting, context: context, now: now, in: transaction)
                return .failure(.chainRevoked(.forkDetected))
            }
            guard let chains = try doomed(verified.userID, acting.head.id, now, transaction) else { return .failure(.sessionNotFound) }
            var revoked: [ChainID] = []
            for chain in chains {
                guard try transaction.markRevoked(chain.id, reason: .signedOut, now: now) else { continue }
                try transaction.record(.chainRevoked(chain, username: acting.username, reason: .signedOut, actingChain: acting.head.id,
                                                     context: context), at: now)
                revoked.append(chain.id)
            }
            return .success(revoked)
        }
        return try result.get()
    }
}

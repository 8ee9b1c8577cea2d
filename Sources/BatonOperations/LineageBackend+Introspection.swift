import BatonCore
import BatonStorage

extension LineageBackend {
    /// RFC 7662: what `token` grants now, decided by the same `Rules.verify` as verify, or nil.
    ///
    /// A pure read, unlike verify: the resource server asking is not the token's holder, so
    /// its question must not take R3a's lost-response retry away from the device (no
    /// "presented" mark), and a replaced sibling it was shown is reported inactive, not
    /// revoked (R4 stays with the requests a holder makes: verify, exchange, logout). No
    /// DPoP proof is checked here: a bound chain reports its key (`cnf.jkt`) and the
    /// resource server checks the proof of the request it received (RFC 9449 §6.2, §7.1).
    package func introspect(_ token: String) throws(BatonError) -> Introspection? {
        guard let presented = try authenticate(token) else { return nil }
        let now = clock.now()
        let (record, standing) = try read { transaction throws(Transaction.Failure) -> (ChainRecord?, Standing) in
            guard let record = try transaction.chain(presented.chainID, forUpdate: false) else { return (nil, .unknown) }
            return (record, try transaction.standing(of: presented, in: record.head))
        }
        guard let record, Rules.verify(standing, record.head, now: now, policy) == .accepted else { return nil }
        let chain = record.head
        return Introspection(userID: chain.userID, username: record.username, chainID: chain.id, deviceID: chain.deviceID,
                             issuedAt: chain.issuedAt, expiresAt: chain.expiresAt, authTime: chain.authTime, jkt: chain.jkt)
    }

    /// RFC 7009: revokes the chain any token Baton issued belongs to (the head or an exchanged
    /// one: whoever shows it wants the session gone), reason `logout` with `note`, audited and
    /// announced like every revocation. Locks the user's row before the chain's, as every
    /// operation that locks both does.
    /// - Returns: the chain, or nil for a forged or unknown token.
    package func revokeChain(ofToken token: String, note: String, context: RequestContext) throws(BatonError) -> ChainID? {
        guard let presented = try authenticate(token) else { return nil }
        return try write { [self] transaction throws(Transaction.Failure) -> ChainID? in
            // A chain's user never changes, so reading it unlocked first is safe.
            guard let owner = try transaction.chain(presented.chainID, forUpdate: false)?.head.userID else { return nil }
            try transaction.lockUser(owner)
            guard let record = try transaction.chain(presented.chainID, forUpdate: true) else { return nil }
            try revoke(record.head, username: record.username, reason: .logout, note: note, context: context, now: clock.now(), in: transaction)
            return record.head.id
        }
    }
}

import BatonCore
import BatonStorage
import Synchronization

/// What a store gives the operations: its transactions, and the policy, clock, token codec,
/// password hasher and attempt limits of this process. Conforming to it is what makes a store
/// a `LineageStore`: every operation (login, exchange, verify, logout, confirm, the password
/// changes, the revocations) is written once, in extensions of this protocol, against
/// `StoreTransaction`; the stores add only rows, SQL and how a transaction runs.
///
/// The operations are generic over the store (`Self`), not written against existentials:
/// each call into a transaction is a direct witness call on the concrete type.
package protocol LineageBackend: AnyObject, Sendable {
    /// The store's transaction: its rows and SQL.
    associatedtype Transaction: StoreTransaction

    /// The lifetimes and device rules in force.
    var policy: Policy { get }
    /// Where "now" comes from (a manual clock in tests).
    var clock: any WallClock { get }
    /// The token key ring as this process last read it; nil for a store opened without the
    /// key (admin CLI): token operations are then a bug.
    var keyRing: KeyRingCache? { get }
    /// argon2id, in its bounded queue.
    var hasher: PasswordHasher { get }
    /// This process's login throttle and step-up limits.
    var limits: AttemptLimits { get }

    /// Runs `body` in one durable write transaction and returns its result once it committed.
    /// Storage failures become `.unavailable`; nothing `body` wrote stays when it throws.
    func write<T>(_ body: @escaping (Transaction) throws(Transaction.Failure) -> T) throws(BatonError) -> T

    /// `write`, without blocking the caller where the store can (`writesWithoutWaiting`):
    /// `then` gets the result exactly once, on the store's writer thread after the commit. Where
    /// it cannot, this is `write`, and `then` runs before it returns.
    func write<T>(_ body: @escaping (Transaction) throws(Transaction.Failure) -> T, then: @escaping @Sendable (Result<T, BatonError>) -> Void)

    /// Whether `write(_:then:)` returns without waiting for the database (SQLite's writer
    /// thread); false: it blocks, like `write`.
    var writesWithoutWaiting: Bool { get }

    /// Runs `body`'s reads on committed state without waiting for writers. Storage failures
    /// become `.unavailable`.
    func read<T>(_ body: (Transaction) throws(Transaction.Failure) -> T) throws(BatonError) -> T

    /// R3a's "presented" mark for a head that verify saw, from inside verify's `read`. Each
    /// store does it its own way (its comment says why); it must never undo a concurrent exchange.
    func notePresented(_ chain: ChainHead, reading transaction: Transaction) throws(Transaction.Failure)

    /// The chain's committed row from the store's memory when the store can prove it current
    /// (SQLite: `HeadMemory`); nil: read it. Never a row older than an acknowledged write.
    func recalledChain(_ id: ChainID) -> ChainRecord?

    /// `read`, where `body` may hand the chain rows it read to `remember`: the store keeps
    /// them for `recalledChain` if it can prove they were the committed state.
    func readRemembering<T>(_ body: (Transaction, _ remember: (ChainRecord) -> Void) throws(Transaction.Failure) -> T) throws(BatonError) -> T
}

extension LineageBackend {
    /// No writer thread of its own: the caller waits for the commit.
    package func write<T>(_ body: @escaping (Transaction) throws(Transaction.Failure) -> T, then: @escaping @Sendable (Result<T, BatonError>) -> Void) {
        do throws(BatonError) { then(.success(try write(body))) } catch { then(.failure(error)) }
    }

    package var writesWithoutWaiting: Bool { false }

    /// No memory: every verify reads.
    package func recalledChain(_ id: ChainID) -> ChainRecord? { nil }

    /// No memory: a plain `read`.
    package func readRemembering<T>(_ body: (Transaction, _ remember: (ChainRecord) -> Void) throws(Transaction.Failure) -> T) throws(BatonError) -> T {
        try read { transaction throws(Transaction.Failure) in try body(transaction) { _ in } }
    }
}

/// The attempt limits one Baton process keeps in memory: the login throttle (per username,
/// address and pair) and the per-chain step-up limit.
package final class AttemptLimits: Sendable {
    /// Failed logins per username, address and pair (`LoginThrottle`).
    package let throttle = Mutex(LoginThrottle())
    /// Confirmations per chain (`StepUpGuard`).
    package let stepUps = StepUpGuard()
    /// Refused DPoP proofs' audit, coalesced per chain and window (`ProofFailureLog`).
    package let proofFailures = ProofFailureLog()
    /// Each bound chain's budget of refused proofs (`ProofRefusalBudget`).
    package let proofRefusals = ProofRefusalBudget()

    package init() {}
}

// MARK: - Plumbing shared by the operations

extension LineageBackend {
    /// The codec of the ring as last read; nil for a store opened without a key.
    package var codec: TokenCodec? { keyRing?.codec }

    /// The token's claims if its MAC verifies under a key of the ring, from this process's
    /// copy (`KeyRingCache.authenticate`: never a database read, whatever the token names).
    /// - Throws: `.unavailable` for a token naming a key the copy is too old to rule out.
    package func authenticate(_ token: String) throws(BatonError) -> PresentedToken? {
        guard let keyRing else { preconditionFailure("token operation on a store opened without a key") }
        return try keyRing.authenticate(token)
    }

    /// The chain a MAC-verified token names (whatever its state), for logging a refused
    /// request; nil for a forged or malformed token, or a store opened without a key.
    package func chainID(ofToken token: String) -> ChainID? {
        codec?.authenticate(token)?.chainID
    }

    /// Writes one audit event in its own durable transaction.
    package func audit(_ event: AuditEvent) throws(BatonError) {
        try write { [clock] transaction throws(Transaction.Failure) in try transaction.record(event, at: clock.now()) }
    }

    /// Makes `issued` the head of `chain` and returns its bundle; `attempt` is the number of the
    /// exchange attempt that made it (R3b), nil when the client sent none.
    func installHead(_ issued: IssuedToken, of chain: ChainHead, attempt: Int? = nil, usedFrom context: RequestContext, now: Instant,
                     in transaction: Transaction) throws(Transaction.Failure) -> TokenBundle {
        precondition(issued.chainID == chain.id)
        let expiresAt = min(now + policy.tokenTTL, chain.sessionEnd(policy))
        try transaction.installHead(HeadUpdate(generation: issued.generation, hash: issued.hash.bytes, expiresAt: expiresAt,
                                               keyID: issued.keyID, attempt: attempt, usedFrom: context),
                                    of: chain.id, now: now)
        return TokenBundle(issued: issued, chain: chain, expiresAt: expiresAt, now: now, policy: policy)
    }

    /// Revokes `chain` (if not already) and writes its `chain_revoked` event, with the
    /// operator's `note` (why) when given, and `scope` `all` for a revocation of every chain
    /// (`isBulk`: not evidence about this one, SecurityEvents).
    /// - Returns: whether this call revoked it.
    @discardableResult
    func revoke(
        _ chain: ChainHead, username: String?, reason: RevocationReason, note: String? = nil, isBulk: Bool = false,
        context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) -> Bool {
        guard try transaction.markRevoked(chain.id, reason: reason, now: now) else { return false }
        try transaction.record(.chainRevoked(chain, username: username, reason: reason, note: note, isBulk: isBulk, context: context), at: now)
        return true
    }

    /// Revokes every chain of the user not yet revoked, whatever its age (locked after the
    /// user's row, which the caller holds), with `reason`; returns the ids it revoked, `except`
    /// aside.
    func revokeUnrevokedChains(
        ofUser userID: Int64, username: String, except kept: ChainID? = nil, reason: RevocationReason, note: String? = nil,
        context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) -> [ChainID] {
        var revoked: [ChainID] = []
        for chain in try transaction.unrevokedChains(ofUser: userID, forUpdate: true) where chain.id != kept {
            if try revoke(chain, username: username, reason: reason, note: note, context: context, now: now, in: transaction) {
                revoked.append(chain.id)
            }
        }
        return revoked
    }

    /// R4: audits `fork_detected` and revokes the chain.
    func recordFork(_ presented: PresentedToken, _ record: ChainRecord, context: RequestContext, now: Instant, in transaction: Transaction) throws(Transaction.Failure) {
        let chain = record.head
        try transaction.record(
            AuditEvent(kind: .forkDetected, userID: chain.userID, username: record.username, chainID: chain.id,
                       generation: presented.generation, context: context,
                       detail: ["presented_generation": .int(Int64(presented.generation)),
                                "head_generation": .int(Int64(chain.generation)),
                                "chain_device_id": .string(chain.deviceID)]),
            at: now)
        try revoke(chain, username: record.username, reason: .forkDetected, context: context, now: now, in: transaction)
    }

    /// R3a's mark for a head refused while presented (exchange, logout after expiry...).
    func markPresented(_ chain: ChainHead, standing: Standing, in transaction: Transaction) throws(Transaction.Failure) {
        guard standing == .head, !chain.presented else { return }
        try transaction.markHeadPresented(chain.id)
    }
}

import BatonCore
import BatonStorage
import Dispatch

extension LineageBackend {
    /// DPoP (RFC 9449 §4.3 check 12.2 and §7.2): whether the request's presentation fits the
    /// chain, decided before any rule so that a refused request changes nothing (no
    /// consumption, no "presented" mark, no reuse detection, no revocation: the token alone is
    /// harmless, and revoking would give anyone who finds a leaked token an off-switch for the
    /// victim's session).
    ///
    /// A refusal of a bound chain is audited `proof_failed` (and reported as
    /// `device.proof_rejected`) through `noteProofFailure`: coalesced per chain and window and
    /// written off the request path, never in `transaction`. Not audited: "use the nonce", the
    /// normal first answer to a client whose clock is off, and a DPoP presentation of a bearer
    /// chain (nothing is at stake).
    /// - Returns: the error to answer, or nil to go on.
    ///
    /// A state-changing request (this overload) of a bound chain also records its proof in the
    /// database (`proof_replays`), in its own transaction: a whole captured request replayed to
    /// another instance, or after a restart, is refused (`jti_replayed`) with nothing changed.
    /// Otherwise a replayed exchange would be a bound lost-response retry, replacing the
    /// device's successor and so revoking the chain at its next use (review finding 2).
    ///
    /// `standing` is the presented token's against the chain: the replay claim (in memory and
    /// in the database) is made only for a live chain (`claimsReplay`), so requests the rules
    /// refuse anyway (a revoked chain's token, issue 28 finding 1) take no place.
    func proofRefusal(_ record: ChainRecord, standing: Standing, generation: Int, context: RequestContext, now: Instant,
                      in transaction: Transaction) throws(Transaction.Failure) -> BatonError? {
        var refusal = keyRefusal(record, standing: standing, context: context, now: now)
        if refusal == nil, claimsReplay(record, standing: standing, now: now), let claim = context.replayClaim,
           try !transaction.recordProof(claim.digest, keepUntil: claim.keepUntil, now: now) {
            refusal = Self.replayed
        }
        guard let refusal else { return nil }
        if let event = Self.proofFailedEvent(refusal, record, generation: generation, context: context) { noteProofFailure(event) }
        return refusal
    }

    /// The durable replay check (`proof_replays`) of a bound chain's state-changing request
    /// whose proof the in-memory check let through (confirm, password, the sign-outs, and a
    /// verify authorizing a state-changing request): refused `jti_replayed`, audited, when
    /// another instance or this one before a restart accepted it already.
    func durableReplayRefusal(_ record: ChainRecord, standing: Standing, generation: Int, context: RequestContext, now: Instant,
                              in transaction: Transaction) throws(Transaction.Failure) -> BatonError? {
        guard claimsReplay(record, standing: standing, now: now), let claim = context.replayClaim,
              try !transaction.recordProof(claim.digest, keepUntil: claim.keepUntil, now: now)
        else { return nil }
        if let event = Self.proofFailedEvent(Self.replayed, record, generation: generation, context: context) { noteProofFailure(event) }
        return Self.replayed
    }

    /// As `proofRefusal`, for a read path (verify, the read half of a confirmation): the audit
    /// event, if any, is written in its own transaction.
    func proofRefusal(_ record: ChainRecord, standing: Standing, generation: Int, context: RequestContext, now: Instant) -> BatonError? {
        guard let refusal = keyRefusal(record, standing: standing, context: context, now: now) else { return nil }
        if let event = Self.proofFailedEvent(refusal, record, generation: generation, context: context) { noteProofFailure(event) }
        return refusal
    }

    /// Hands a `proof_failed` event to this process's `ProofFailureLog` (coalesced per chain
    /// and window, docs/dpop.md "Audit and webhook"), starting its writer if it was idle, and
    /// spends one of the chain's refusals (`ProofRefusalBudget`). Never a durable write on the
    /// caller's thread: a refused verify runs on an event loop.
    func noteProofFailure(_ event: AuditEvent) {
        let now = clock.now()
        if let chain = event.chainID { limits.proofRefusals.noteRefusal(of: chain, at: now) }
        if limits.proofFailures.note(event, at: now) { scheduleProofFailureWriter(after: .zero) }
    }

    /// Writes what the log has due, in one transaction, and wakes again while a window is open.
    func writeProofFailures() {
        let log = limits.proofFailures
        let (events, again) = log.due(at: clock.now())
        writeProofFailureEvents(events)
        if again { scheduleProofFailureWriter(after: log.tick) }
    }

    /// Writes every open window's count now (at shutdown, before the store closes).
    package func drainProofFailures() {
        writeProofFailureEvents(limits.proofFailures.drain(at: clock.now()))
    }

    private func writeProofFailureEvents(_ events: [(AuditEvent, Instant)]) {
        guard !events.isEmpty else { return }
        do {
            try write { transaction throws(Transaction.Failure) in
                for (event, at) in events { try transaction.record(event, at: at) }
            }
        } catch {
            limits.proofFailures.lost(events)
        }
    }

    private func scheduleProofFailureWriter(after delay: Duration) {
        let nanoseconds = Int(delay.components.seconds) * 1_000_000_000 + Int(delay.components.attoseconds / 1_000_000_000)
        ProofFailureLog.queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in self?.writeProofFailures() }
    }

    /// The refusal of a verify's proof for `chain` before it is even parsed, when the chain is
    /// over its budget of refused proofs (`ProofRefusalBudget`): a flood of proofs by another
    /// key or badly signed ones then costs what a made-up token does. Nil (no lock, no clock)
    /// while no chain has had a proof refused lately.
    package func proofBudgetRefusal(for chain: ChainID) -> BatonError? {
        let budget = limits.proofRefusals
        guard !budget.isIdle else { return nil }
        return budget.refusal(for: chain, at: clock.now())
    }

    /// The presentation against the chain's key (`PresentedProof.refusal(forChainKey:)`; a
    /// verify's signature, put off until now, unless the chain is over its `ProofRefusalBudget`); for a
    /// proof by the chain's key of a live chain, then its replay check. Only such a proof takes
    /// a place in the replay cache: proofs by keys of anyone's making, and proofs for a chain
    /// the rules refuse anyway (revoked, its user disabled, its session over), are answered
    /// without one, so they cannot fill it (docs/dpop.md, "The replay cache").
    func keyRefusal(_ record: ChainRecord, standing: Standing, context: RequestContext, now: Instant) -> BatonError? {
        let budget = limits.proofRefusals
        if let refusal = context.proof.refusal(forChainKey: record.head.jkt, overBudget: { budget.refusal(for: record.head.id, at: now) }) {
            return refusal
        }
        guard claimsReplay(record, standing: standing, now: now) else { return nil }
        return Self.replayRefusal(context.replayClaim)
    }

    /// Whether a proof by the chain's key presenting a token of `standing` is remembered (in
    /// the replay cache, and for a state-changing request in `proof_replays`): a bound chain
    /// the rules have not refused already (`Rules.precedingError`: a known token of a chain
    /// neither revoked nor its user disabled nor past its session). The rules answer the rest
    /// with nothing changed, so a replay of such a proof changes nothing either.
    func claimsReplay(_ record: ChainRecord, standing: Standing, now: Instant) -> Bool {
        record.head.isBound && Rules.precedingError(standing, record.head, now: now, policy) == nil
    }

    /// The answer to a proof its replay check refuses: a replay (`jti_replayed`, audited as
    /// `proof_failed`), a key over its share of the cache (429, this key only), or a full cache
    /// (503, the client did nothing wrong); nil for a fresh one.
    static func replayRefusal(_ claim: ProofReplayClaim?) -> BatonError? {
        switch claim?.outcome() {
        case nil, .fresh?: nil
        case .replayed?: replayed
        case .overShare?: .tooManyProofs(retryAfterSeconds: 1)
        case .full?: .unavailable("The DPoP replay cache is full: too many proofs within the window. Try again shortly.")
        }
    }

    /// The answer to a replayed proof.
    static var replayed: BatonError { .invalidDPoPProof(failure: "jti_replayed", description: "The DPoP proof was used before.") }

    /// The `proof_failed` event of a refusal worth recording (a bound chain, not a nonce round trip).
    static func proofFailedEvent(_ refusal: BatonError, _ record: ChainRecord, generation: Int, context: RequestContext) -> AuditEvent? {
        guard record.head.isBound, case .invalidDPoPProof(let failure, _) = refusal else { return nil }
        return AuditEvent(kind: .proofFailed, userID: record.head.userID, username: record.username, chainID: record.head.id,
                          generation: generation, context: context,
                          detail: ["failure": .string(failure), "scheme": .string(context.proof.scheme)])
    }
}

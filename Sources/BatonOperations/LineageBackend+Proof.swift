import BatonCore
import BatonStorage

extension LineageBackend {
    /// DPoP (RFC 9449 §4.3 check 12.2 and §7.2): whether the request's presentation fits the
    /// chain, decided before any rule so that a refused request changes nothing (no
    /// consumption, no "presented" mark, no reuse detection, no revocation: the token alone is
    /// harmless, and revoking would give anyone who finds a leaked token an off-switch for the
    /// victim's session).
    ///
    /// A refusal of a bound chain is audited `proof_failed` (and reported as
    /// `device.proof_rejected`) in `transaction`, except "use the nonce", which is the normal
    /// first answer to a client whose clock is off. A DPoP presentation of a bearer chain is
    /// refused without an audit: nothing is at stake.
    /// - Returns: the error to answer, or nil to go on.
    ///
    /// A state-changing request (this overload) of a bound chain also records its proof in the
    /// database (`proof_replays`), in its own transaction: a whole captured request replayed to
    /// another instance, or after a restart, is refused (`jti_replayed`) with nothing changed.
    /// Otherwise a replayed exchange would be a bound lost-response retry, replacing the
    /// device's successor and so revoking the chain at its next use (review finding 2).
    func proofRefusal(_ record: ChainRecord, generation: Int, context: RequestContext, now: Instant, in transaction: Transaction) throws(Transaction.Failure) -> BatonError? {
        var refusal = Self.keyRefusal(record, context: context)
        if refusal == nil, record.head.isBound, let claim = context.replayClaim,
           try !transaction.recordProof(claim.digest, keepUntil: claim.keepUntil, now: now) {
            refusal = Self.replayed
        }
        guard let refusal else { return nil }
        if let event = Self.proofFailedEvent(refusal, record, generation: generation, context: context) {
            try transaction.record(event, at: now)
        }
        return refusal
    }

    /// As `proofRefusal`, for a read path (verify, the read half of a confirmation): the audit
    /// event, if any, is written in its own transaction.
    func proofRefusal(_ record: ChainRecord, generation: Int, context: RequestContext) throws(BatonError) -> BatonError? {
        guard let refusal = Self.keyRefusal(record, context: context) else { return nil }
        if let event = Self.proofFailedEvent(refusal, record, generation: generation, context: context) { try audit(event) }
        return refusal
    }

    /// The presentation against the chain's key (`PresentedProof.refusal(forChainKey:)`); for a
    /// proof by the chain's key, then its replay check. Only such a proof takes a place in the
    /// replay cache: proofs by keys of anyone's making are refused without one, so they
    /// cannot fill it (docs/dpop.md, "The replay cache").
    static func keyRefusal(_ record: ChainRecord, context: RequestContext) -> BatonError? {
        if let refusal = context.proof.refusal(forChainKey: record.head.jkt) { return refusal }
        guard record.head.isBound else { return nil }
        return replayRefusal(context.replayClaim)
    }

    /// The answer to a proof its replay check refuses: a replay (`jti_replayed`, audited as
    /// `proof_failed`), or a full cache (503, the client did nothing wrong); nil for a fresh one.
    static func replayRefusal(_ claim: ProofReplayClaim?) -> BatonError? {
        switch claim?.outcome() {
        case nil, .fresh?: nil
        case .replayed?: replayed
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

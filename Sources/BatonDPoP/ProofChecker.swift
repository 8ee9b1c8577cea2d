import BatonCore

/// The whole RFC 9449 §4.3 check: `DPoPProof.verify` and the replay check (§11.1) against
/// a `ReplayCache`, one per server instance.
package struct ProofChecker: Sendable {
    package let policy: ProofPolicy
    package let replayCache: ReplayCache

    /// A checker for `policy`, remembering `jti`s in `replayCache` (a new one of the
    /// default capacity, for the policy's window, when nil).
    package init(policy: ProofPolicy, replayCache: ReplayCache? = nil) {
        self.policy = policy
        self.replayCache = replayCache ?? ReplayCache(window: policy.replayWindow)
        precondition(self.replayCache.window >= policy.replayWindow, "the replay cache forgets proofs the policy still accepts")
    }

    /// Checks the proof `header` for a request (see `DPoPProof.verify`) and remembers its
    /// `jti`, last, so that only a proof accepted in every other respect takes a place in
    /// the cache.
    /// - Returns: the thumbprint of the proof's key.
    /// - Throws: the `ProofError` of the first check that failed; `.replayed` for a proof
    ///   accepted before; `.replayCacheFull` when it cannot be remembered.
    package func check(_ header: String, method: String, url: String, tokenHash: TokenHash?, now: Instant) throws(ProofError) -> Thumbprint {
        let (thumbprint, claim) = try accept(header, method: method, url: url, tokenHash: tokenHash, now: now)
        switch claim.outcome() {
        case .fresh: return thumbprint
        case .replayed: throw .replayed
        case .full, .overShare: throw .replayCacheFull
        }
    }

    /// Every check of `check` but the replay check, which the returned claim makes when the
    /// caller has seen that the proof deserves a place in the cache (the server: its key is
    /// the presented chain's, or the login's password was right).
    /// - Returns: the thumbprint of the proof's key, and the claim that remembers its `jti`.
    /// - Throws: the `ProofError` of the first check that failed.
    package func accept(_ header: String, method: String, url: String, tokenHash: TokenHash?, now: Instant) throws(ProofError) -> (Thumbprint, ProofReplayClaim) {
        let proof = try DPoPProof.verify(header, method: method, url: url, tokenHash: tokenHash, now: now, policy: policy)
        return (proof.thumbprint, claim(for: proof, now: now))
    }

    /// `accept` with the signature put off (`DPoPProof.verifyDeferringSignature`): the claim
    /// must be made only after the pending signature verified.
    package func acceptDeferringSignature(_ header: String, method: String, url: String, tokenHash: TokenHash?,
                                          now: Instant) throws(ProofError) -> (Thumbprint, ProofReplayClaim, DPoPProof.PendingSignature) {
        let (proof, signature) = try DPoPProof.verifyDeferringSignature(header, method: method, url: url, tokenHash: tokenHash,
                                                                        now: now, policy: policy)
        return (proof.thumbprint, claim(for: proof, now: now), signature)
    }

    private func claim(for proof: DPoPProof, now: Instant) -> ProofReplayClaim {
        let cache = replayCache
        let digest = ReplayCache.digest(proof.jti, of: proof.thumbprint)
        return ProofReplayClaim(digest: digest, keepUntil: now + cache.window + .milliseconds(1)) {
            switch cache.remember(digest: digest, of: proof.thumbprint, now: now) {
            case .fresh: .fresh
            case .replayed: .replayed
            case .full: .full
            case .overShare: .overShare
            }
        }
    }
}

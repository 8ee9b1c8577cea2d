@testable import BatonCore
import Testing

/// The DPoP decisions that need no server: which presentation may use which chain
/// (`PresentedProof.refusal`), and R3a for bound chains (`Rules.isBoundLostResponseRetry`).
struct DPoPRulesTests {
    static let jkt = String(repeating: "A", count: 43)
    static let other = String(repeating: "B", count: 43)

    @Test(arguments: [
        // (presentation, chain key, expected failure or nil)
        (PresentedProof.bearer, nil, nil),
        (.bearer, jkt, "bearer_for_bound_chain"),
        (.missing, jkt, "proof_missing"),
        (.verified(jkt: jkt), jkt, nil),
        (.verified(jkt: other), jkt, "key_mismatch"),
        (.failed(failure: "htm_mismatch", description: "d", needsNonce: false), jkt, "htm_mismatch"),
        (.missing, nil, "session_not_bound"),
        (.verified(jkt: jkt), nil, "session_not_bound"),
    ] as [(PresentedProof, String?, String?)])
    func refusalTable(_ presentation: PresentedProof, _ chainKey: String?, _ failure: String?) {
        let refusal = presentation.refusal(forChainKey: chainKey)
        if let failure {
            guard case .invalidDPoPProof(let found, _)? = refusal else { Issue.record("\(String(describing: refusal))"); return }
            #expect(found == failure)
        } else {
            #expect(refusal == nil)
        }
    }

    @Test func aProofThatNeedsTheNonceIsAnsweredUseDPoPNonce() {
        let refusal = PresentedProof.failed(failure: "nonce_required", description: "d", needsNonce: true).refusal(forChainKey: Self.jkt)
        #expect(refusal == .useDPoPNonce(failure: "nonce_required", description: "d"))
        #expect(refusal?.code == .useDPoPNonce)
    }

    let start = Instant(milliseconds: 1_800_000_000_000)
    var policy = Policy()

    func bound(presented: Bool = false) -> ChainHead {
        ChainHead(id: ChainID(rawValue: 9), userID: 1, deviceID: "phone-1", deviceClass: .mobile, createdAt: start,
                  generation: 3, hash: Digest.sha256([1]), issuedAt: start + .seconds(600), expiresAt: start + .seconds(1500),
                  presented: presented, revocation: nil, jkt: Self.jkt)
    }

    func parent(issuedAt: Instant?) -> ExchangeRecord {
        ExchangeRecord(at: start + .seconds(600), ip: nil, userAgent: nil, deviceID: nil, tokenIssuedAt: issuedAt)
    }

    /// Long past the 10 s grace, within the parent's exchange window: a retry, whatever the
    /// device id (the caller proved the key before the rules ran). Presented, too old, not
    /// the parent, no issue time, or a strict grace: a reuse.
    @Test func boundRetryLastsTheParentsExchangeWindow() {
        let token = PresentedToken(chainID: ChainID(rawValue: 9), generation: 2, hash: TokenHash(bytes: Digest.sha256([2])))
        let parentIssued = start
        let windowEnd = parentIssued + policy.tokenTTL + policy.exchangeWindow
        let hourLater = start + .seconds(4200)
        #expect(Rules.exchange(.consumed(parent(issuedAt: parentIssued)), bound(), token: token, context: RequestContext(), now: hourLater, policy) == .retry)
        #expect(Rules.isBoundLostResponseRetry(token, bound(), consumed: parent(issuedAt: parentIssued), now: windowEnd - .milliseconds(1), policy))
        #expect(!Rules.isBoundLostResponseRetry(token, bound(), consumed: parent(issuedAt: parentIssued), now: windowEnd, policy))
        #expect(!Rules.isBoundLostResponseRetry(token, bound(presented: true), consumed: parent(issuedAt: parentIssued), now: hourLater, policy))
        #expect(!Rules.isBoundLostResponseRetry(token, bound(), consumed: parent(issuedAt: nil), now: hourLater, policy))
        let grandparent = PresentedToken(chainID: ChainID(rawValue: 9), generation: 1, hash: TokenHash(bytes: Digest.sha256([3])))
        #expect(!Rules.isBoundLostResponseRetry(grandparent, bound(), consumed: parent(issuedAt: parentIssued), now: hourLater, policy))
        var strict = policy
        strict.retryGrace = .zero
        #expect(!Rules.isBoundLostResponseRetry(token, bound(), consumed: parent(issuedAt: parentIssued), now: hourLater, strict))
    }
}

import BatonCore
@testable import BatonOperations
import Testing

/// `ProofSignatureBudget` alone: a token bucket per chain of failed proof signatures.
struct ProofSignatureBudgetTests {
    let alice = ChainID(rawValue: 1), bob = ChainID(rawValue: 2)
    let start = Instant(milliseconds: 1_000_000)

    @Test func aChainMayFailItsBurstThenIsRefusedUntilABucketRefills() {
        let budget = ProofSignatureBudget(burst: 20, perSecond: 5)
        #expect(budget.isIdle)
        for failure in 0..<20 {
            #expect(budget.refusal(for: alice, at: start) == nil, "failure \(failure)")
            budget.noteFailure(of: alice, at: start)
        }
        #expect(budget.refusal(for: alice, at: start) == .tooManyRefusedProofs(retryAfterSeconds: 1))
        #expect(budget.refusal(for: bob, at: start) == nil)  // nobody else
        // 5 a second: one check back after 200 ms.
        #expect(budget.refusal(for: alice, at: start + .milliseconds(199)) != nil)
        #expect(budget.refusal(for: alice, at: start + .milliseconds(200)) == nil)
    }

    @Test func aFullBucketIsForgottenAndTheHotPathGoesIdle() {
        let budget = ProofSignatureBudget(burst: 2, perSecond: 1)
        budget.noteFailure(of: alice, at: start)
        #expect(!budget.isIdle && budget.trackedChains == 1)
        #expect(budget.refusal(for: alice, at: start + .seconds(1)) == nil)
        #expect(budget.isIdle && budget.trackedChains == 0)
    }

    @Test func atCapacityFullBucketsMakeRoomAndBeyondItChainsGoUnlimited() {
        let budget = ProofSignatureBudget(burst: 1, perSecond: 1, capacity: 2)
        budget.noteFailure(of: alice, at: start)
        budget.noteFailure(of: bob, at: start)
        budget.noteFailure(of: ChainID(rawValue: 3), at: start)  // no room: not tracked
        #expect(budget.trackedChains == 2)
        #expect(budget.refusal(for: ChainID(rawValue: 3), at: start) == nil)
        budget.noteFailure(of: ChainID(rawValue: 3), at: start + .seconds(2))  // alice's and bob's are full again: forgotten
        #expect(budget.trackedChains == 1)
        #expect(budget.refusal(for: ChainID(rawValue: 3), at: start + .seconds(2)) != nil)
    }
}

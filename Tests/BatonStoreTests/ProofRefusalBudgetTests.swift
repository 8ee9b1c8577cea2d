import BatonCore
@testable import BatonOperations
import Testing

/// `ProofRefusalBudget` alone: a token bucket per chain of refused proofs.
struct ProofRefusalBudgetTests {
    let alice = ChainID(rawValue: 1), bob = ChainID(rawValue: 2)
    let start = Instant(milliseconds: 1_000_000)

    @Test func aChainMayFailItsBurstThenIsRefusedUntilABucketRefills() {
        let budget = ProofRefusalBudget(burst: 20, perSecond: 5)
        #expect(budget.isIdle)
        for refusal in 0..<20 {
            #expect(budget.refusal(for: alice, at: start) == nil, "refusal \(refusal)")
            budget.noteRefusal(of: alice, at: start)
        }
        #expect(budget.refusal(for: alice, at: start) == .tooManyRefusedProofs(retryAfterSeconds: 1))
        #expect(budget.refusal(for: bob, at: start) == nil)  // nobody else
        // 5 a second: one check back after 200 ms.
        #expect(budget.refusal(for: alice, at: start + .milliseconds(199)) != nil)
        #expect(budget.refusal(for: alice, at: start + .milliseconds(200)) == nil)
    }

    @Test func aFullBucketIsForgottenAndTheHotPathGoesIdle() {
        let budget = ProofRefusalBudget(burst: 2, perSecond: 1)
        budget.noteRefusal(of: alice, at: start)
        #expect(!budget.isIdle && budget.trackedChains == 1)
        #expect(budget.refusal(for: alice, at: start + .seconds(1)) == nil)
        #expect(budget.isIdle && budget.trackedChains == 0)
    }

    @Test func atCapacityFullBucketsMakeRoomAndBeyondItChainsGoUnlimited() {
        let budget = ProofRefusalBudget(burst: 1, perSecond: 1, capacity: 2)
        budget.noteRefusal(of: alice, at: start)
        budget.noteRefusal(of: bob, at: start)
        budget.noteRefusal(of: ChainID(rawValue: 3), at: start)  // no room: not tracked
        #expect(budget.trackedChains == 2)
        #expect(budget.refusal(for: ChainID(rawValue: 3), at: start) == nil)
        budget.noteRefusal(of: ChainID(rawValue: 3), at: start + .seconds(2))  // alice's and bob's are full again: forgotten
        #expect(budget.trackedChains == 1)
        #expect(budget.refusal(for: ChainID(rawValue: 3), at: start + .seconds(2)) != nil)
    }
}

extension ProofRefusalBudgetTests {
    /// A chain refused once and never seen again does not keep everyone's verify on the lock:
    /// once every bucket has refilled, the next look forgets them all.
    @Test func onceEveryBucketHasRefilledTheHotPathGoesIdleWhicheverChainLooks() {
        let budget = ProofRefusalBudget(burst: 20, perSecond: 5)
        budget.noteRefusal(of: alice, at: start)
        budget.noteRefusal(of: alice, at: start)
        #expect(!budget.isIdle)
        #expect(budget.refusal(for: bob, at: start + .milliseconds(399)) == nil)
        #expect(!budget.isIdle)  // alice's bucket is two refusals short until 400 ms
        #expect(budget.refusal(for: bob, at: start + .milliseconds(400)) == nil)
        #expect(budget.isIdle && budget.trackedChains == 0)
    }

    @Test func aBurstOfZeroIsNoBudget() {
        let budget = ProofRefusalBudget(burst: 0, perSecond: 1)
        for _ in 0..<100 { budget.noteRefusal(of: alice, at: start) }
        #expect(budget.isIdle && budget.refusal(for: alice, at: start) == nil)
    }
}

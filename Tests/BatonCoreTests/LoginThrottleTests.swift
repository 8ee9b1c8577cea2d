@testable import BatonCore
import Testing

/// The login throttle's policy (docs/security.md, finding 4), the step-up limit and the hash
/// queue's shares (finding 5), as pure values with an injected time.
struct LoginThrottleTests {
    let start = Instant(milliseconds: 1_800_000_000_000)

    @Test func fiveFailuresOfOnePairBlockThatPairWithDoublingDelays() {
        var throttle = LoginThrottle()
        let now = start
        for _ in 0..<4 {
            throttle.recordFailure(username: "alice", ip: "192.0.2.1", now: now)
            #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.1", now: now) == nil)
        }
        throttle.recordFailure(username: "alice", ip: "192.0.2.1", now: now)
        #expect(throttle.retryAfter(username: "Alice", ip: "192.0.2.1", now: now) == .seconds(60))
        #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.1", now: now + .seconds(60)) == nil)
        throttle.recordFailure(username: "alice", ip: "192.0.2.1", now: now + .seconds(60))
        #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.1", now: now + .seconds(60)) == .seconds(120))
    }

    @Test func failuresFromOtherAddressesDoNotBlockTheOwner() {
        var throttle = LoginThrottle()
        for index in 0..<5 { throttle.recordFailure(username: "alice", ip: "198.51.100.\(index)", now: start) }
        #expect(throttle.retryAfter(username: "alice", ip: "203.0.113.9", now: start) == nil)
    }

    @Test func oneAddressSprayingManyUsersIsBlockedAtTwenty() {
        var throttle = LoginThrottle()
        for index in 0..<19 { throttle.recordFailure(username: "user\(index)", ip: "198.51.100.7", now: start) }
        #expect(throttle.retryAfter(username: "someone-else", ip: "198.51.100.7", now: start) == nil)
        throttle.recordFailure(username: "user19", ip: "198.51.100.7", now: start)
        #expect(throttle.retryAfter(username: "someone-else", ip: "198.51.100.7", now: start) != nil)
        #expect(throttle.retryAfter(username: "someone-else", ip: "198.51.100.8", now: start) == nil)
    }

    @Test func theUsernameCeilingBlocksStrangersButNotKnownAddressesOrDevices() {
        var throttle = LoginThrottle()
        throttle.recordSuccess(username: "alice", ip: "192.0.2.10", deviceID: "alice-phone")
        for index in 0..<100 { throttle.recordFailure(username: "alice", ip: "10.\(index / 250).\(index % 250).1", now: start) }
        #expect(throttle.retryAfter(username: "alice", ip: "203.0.113.1", now: start) != nil)  // a stranger
        #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.10", now: start) == nil)  // her network
        #expect(throttle.retryAfter(username: "ALICE", ip: "203.0.113.1", deviceID: "alice-phone", now: start) == nil)  // her phone elsewhere
        #expect(throttle.retryAfter(username: "alice", ip: "203.0.113.1", deviceID: "other", now: start) != nil)
    }

    @Test func failuresOlderThanTheWindowAreForgotten() {
        var throttle = LoginThrottle()
        for index in 0..<4 { throttle.recordFailure(username: "bob", ip: nil, now: start + .seconds(Int64(index))) }
        throttle.recordFailure(username: "bob", ip: nil, now: start + .seconds(16 * 60))
        #expect(throttle.retryAfter(username: "bob", ip: nil, now: start + .seconds(16 * 60)) == nil)
    }

    @Test func successClearsThePairOnly() {
        var throttle = LoginThrottle()
        for _ in 0..<4 { throttle.recordFailure(username: "carol", ip: "203.0.113.9", now: start) }
        for index in 0..<16 { throttle.recordFailure(username: "x\(index)", ip: "203.0.113.9", now: start) }
        throttle.recordSuccess(username: "Carol", ip: "203.0.113.9")
        throttle.recordFailure(username: "carol", ip: "198.51.100.1", now: start)
        // The pair starts again; the address keeps its 20 failures (one address spraying stays counted).
        #expect(throttle.retryAfter(username: "carol", ip: "198.51.100.1", now: start) == nil)
        #expect(throttle.retryAfter(username: "x", ip: "203.0.113.9", now: start) != nil)
    }

    @Test func familiarMarkersAreBoundedPerUser() {
        var throttle = LoginThrottle()
        for index in 0..<20 { throttle.recordSuccess(username: "dan", ip: "192.0.2.\(index)") }
        #expect(!throttle.isFamiliar(username: "dan", ip: "192.0.2.3", deviceID: nil))  // the oldest forgotten
        #expect(throttle.isFamiliar(username: "dan", ip: "192.0.2.19", deviceID: nil))
    }

    @Test func stepUpLimitAdmitsSixPerMinutePerChain() {
        var limit = StepUpLimit()
        let chain = ChainID(rawValue: 7), other = ChainID(rawValue: 8)
        for second in 0..<6 { #expect(limit.admit(chain, now: start + .seconds(Int64(second))) == nil) }
        #expect(limit.admit(chain, now: start + .seconds(10)) == .seconds(50))
        #expect(limit.admit(other, now: start + .seconds(10)) == nil)
        #expect(limit.admit(chain, now: start + .seconds(60)) == nil)  // the first attempt left the window
    }

    @Test func hashQueueKeepsHalfForOtherAddressesAndOnePlacePerChain() throws {
        var queue = HashQueue(capacity: 8)
        let chain = ChainID(rawValue: 1)
        try queue.enter(HashClaimant(address: "a", chain: chain))
        #expect(throws: HashQueue.Refusal.chainBusy) { try queue.enter(HashClaimant(address: "b", chain: chain)) }
        for _ in 0..<3 { try queue.enter(HashClaimant(address: "a")) }
        #expect(throws: HashQueue.Refusal.addressShareTaken) { try queue.enter(HashClaimant(address: "a")) }
        for _ in 0..<4 { try queue.enter(HashClaimant(address: nil)) }
        #expect(throws: HashQueue.Refusal.full) { try queue.enter(HashClaimant(address: "c")) }
        queue.leave(HashClaimant(address: "a", chain: chain))
        try queue.enter(HashClaimant(address: "c", chain: chain))
        #expect(queue.held == 8)
    }
}

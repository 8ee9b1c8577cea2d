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

    @Test func theUsernameCeilingBlocksStrangersButNotKnownAddresses() {
        var throttle = LoginThrottle()
        throttle.recordSuccess(username: "alice", ip: "192.0.2.10")
        for index in 0..<100 { throttle.recordFailure(username: "alice", ip: "10.\(index / 250).\(index % 250).1", now: start) }
        #expect(throttle.retryAfter(username: "alice", ip: "203.0.113.1", now: start) != nil)  // a stranger
        #expect(throttle.retryAfter(username: "ALICE", ip: "192.0.2.10", now: start) == nil)  // her network
    }

    /// Review F1: rotating through the addresses of one IPv6 /64 is one address for every counter.
    @Test func anIPv6HostCountsAsItsSlash64() {
        var throttle = LoginThrottle()
        for index in 1...5 { throttle.recordFailure(username: "carol", ip: "2001:db8:0:7::\(String(index, radix: 16))", now: start) }
        #expect(throttle.retryAfter(username: "carol", ip: "2001:db8:0:7:ffff::1", now: start) != nil)
        #expect(throttle.retryAfter(username: "carol", ip: "2001:db8:0:8::1", now: start) == nil)
        #expect(AddressGroup.key("2001:DB8:0:7:1:2:3:4") == "2001:db8:0:7::/64")
        #expect(AddressGroup.key("::ffff:192.0.2.1") == "192.0.2.1" && AddressGroup.key("192.0.2.1") == "192.0.2.1")
        #expect(AddressGroup.key("not an address") == "not an address")
    }

    /// Review F2: a sprayer on a shared address (office, carrier NAT) does not block the
    /// account holders who logged in from it; the pair limit still holds for each of them.
    @Test func aKnownAddressIsNotHeldToASprayersAddressLimit() {
        var throttle = LoginThrottle()
        throttle.recordSuccess(username: "bob", ip: "10.2.2.2")
        for index in 0..<25 { throttle.recordFailure(username: "made-up\(index)", ip: "10.2.2.2", now: start) }
        #expect(throttle.retryAfter(username: "bob", ip: "10.2.2.2", now: start) == nil)
        #expect(throttle.retryAfter(username: "someone", ip: "10.2.2.2", now: start) != nil)
        for _ in 0..<5 { throttle.recordFailure(username: "bob", ip: "10.2.2.2", now: start) }
        #expect(throttle.retryAfter(username: "bob", ip: "10.2.2.2", now: start) != nil)
    }

    /// Review F5: folding is ASCII-only, as the stores compare usernames.
    @Test func usernamesFoldInASCIIOnly() {
        var throttle = LoginThrottle()
        for _ in 0..<5 { throttle.recordFailure(username: "ALICE", ip: "192.0.2.1", now: start) }
        #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.1", now: start) != nil)
        #expect(throttle.retryAfter(username: "al\u{130}ce", ip: "192.0.2.1", now: start) == nil)  // another name, refused at validation
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
        #expect(!throttle.isFamiliar(username: "dan", ip: "192.0.2.3"))  // the oldest forgotten
        #expect(throttle.isFamiliar(username: "dan", ip: "192.0.2.19"))
    }

    @Test func stepUpLimitAdmitsSixPerMinutePerChain() {
        var limit = StepUpLimit()
        let chain = ChainID(rawValue: 7), other = ChainID(rawValue: 8)
        for second in 0..<6 { #expect(limit.admit(chain, now: start + .seconds(Int64(second))) == nil) }
        #expect(limit.admit(chain, now: start + .seconds(10)) == .seconds(50))
        #expect(limit.admit(other, now: start + .seconds(10)) == nil)
        #expect(limit.admit(chain, now: start + .seconds(60)) == nil)  // the first attempt left the window
    }

    /// Review F6: an attempt the hash queue refused is given back.
    @Test func aRefundedStepUpAttemptCountsNothing() {
        var limit = StepUpLimit()
        let chain = ChainID(rawValue: 7)
        for _ in 0..<6 {
            #expect(limit.admit(chain, now: start) == nil)
            limit.refund(chain, admittedAt: start)
        }
        for _ in 0..<6 { #expect(limit.admit(chain, now: start) == nil) }
        #expect(limit.admit(chain, now: start) != nil)
    }

    @Test func hashQueueHoldsAnAddressToAQuarterFromHalfFullAndOnePlacePerChain() throws {
        var queue = HashQueue(capacity: 8)
        let chain = ChainID(rawValue: 1)
        try queue.enter(HashClaimant(address: "a", chain: chain))
        #expect(throws: HashQueue.Refusal.chainBusy) { try queue.enter(HashClaimant(address: "b", chain: chain)) }
        // A quiet queue takes one client's parallel logins...
        for _ in 0..<3 { try queue.enter(HashClaimant(address: "a")) }
        #expect(queue.held == 4)
        // ...and from half full on, an address past its quarter gets no more; others do.
        #expect(throws: HashQueue.Refusal.addressShareTaken) { try queue.enter(HashClaimant(address: "a")) }
        try queue.enter(HashClaimant(address: "b"))
        queue.leave(HashClaimant(address: "a", chain: chain))
        try queue.enter(HashClaimant(address: "c", chain: chain))
        #expect(queue.held == 5)
    }

    /// Review F4: two busy addresses take at most the unreserved places; the last quarter is
    /// for addresses that hold none, so another user's login still finds a place.
    @Test func hashQueueKeepsAReserveForAddressesNotInIt() throws {
        var queue = HashQueue(capacity: 8)
        for _ in 0..<6 { try? queue.enter(HashClaimant(address: "m1")) }  // 4: the queue is half full
        for _ in 0..<6 { try? queue.enter(HashClaimant(address: "m2")) }  // 2: its quarter
        #expect(queue.held == 6)
        #expect(throws: HashQueue.Refusal.addressShareTaken) { try queue.enter(HashClaimant(address: "m1")) }
        try queue.enter(HashClaimant(address: "victim"))
        #expect(throws: HashQueue.Refusal.addressShareTaken) { try queue.enter(HashClaimant(address: "victim")) }
        try queue.enter(HashClaimant(address: "another"))
        #expect(throws: HashQueue.Refusal.full) { try queue.enter(HashClaimant(address: "third")) }
        // IPv6: one /64 is one address.
        var six = HashQueue(capacity: 8)
        for _ in 0..<4 { try six.enter(HashClaimant(address: nil)) }
        try six.enter(HashClaimant(address: "2001:db8::1"))
        try six.enter(HashClaimant(address: "2001:db8::2"))
        #expect(throws: HashQueue.Refusal.addressShareTaken) { try six.enter(HashClaimant(address: "2001:db8::3")) }
    }
}

@testable import BatonCore
import Testing

struct LoginThrottleTests {
    let start = Instant(milliseconds: 1_800_000_000_000)

    @Test func fiveFailuresBlockWithGrowingRetryAfter() {
        var throttle = LoginThrottle()
        var now = start
        for _ in 0..<4 {
            throttle.recordFailure(username: "alice", ip: "192.0.2.1", now: now)
            #expect(throttle.retryAfter(username: "alice", ip: "192.0.2.1", now: now) == nil)
            now = now + .seconds(10)
        }
        throttle.recordFailure(username: "alice", ip: "192.0.2.1", now: now)
        let first = throttle.retryAfter(username: "alice", ip: nil, now: now)
        #expect(first == .seconds(60))
        now = now + .seconds(61)
        #expect(throttle.retryAfter(username: "alice", ip: nil, now: now) == nil)
        throttle.recordFailure(username: "alice", ip: nil, now: now)
        #expect(throttle.retryAfter(username: "alice", ip: nil, now: now) == .seconds(120))
    }

    @Test func ipIsCountedAcrossUsernames() {
        var throttle = LoginThrottle()
        for index in 0..<5 { throttle.recordFailure(username: "user\(index)", ip: "198.51.100.7", now: start) }
        #expect(throttle.retryAfter(username: "someone-else", ip: "198.51.100.7", now: start) != nil)
        #expect(throttle.retryAfter(username: "someone-else", ip: "198.51.100.8", now: start) == nil)
    }

    @Test func failuresOlderThanTheWindowAreForgotten() {
        var throttle = LoginThrottle()
        for index in 0..<4 { throttle.recordFailure(username: "bob", ip: nil, now: start + .seconds(Int64(index))) }
        throttle.recordFailure(username: "bob", ip: nil, now: start + .seconds(16 * 60))
        #expect(throttle.retryAfter(username: "bob", ip: nil, now: start + .seconds(16 * 60)) == nil)
    }

    @Test func successClearsTheUsernameCountOnly() {
        var throttle = LoginThrottle()
        for _ in 0..<4 { throttle.recordFailure(username: "Carol", ip: "203.0.113.9", now: start) }
        throttle.recordSuccess(username: "carol")
        throttle.recordFailure(username: "carol", ip: "203.0.113.9", now: start)
        #expect(throttle.retryAfter(username: "carol", ip: nil, now: start) == nil)
        #expect(throttle.retryAfter(username: "x", ip: "203.0.113.9", now: start) != nil)
    }
}

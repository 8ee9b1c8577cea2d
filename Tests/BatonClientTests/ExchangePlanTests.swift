@testable import BatonClient
import Foundation
import Testing

/// The exchange's attempts and the claim's lease as pure values (issue 29, H1, H2, M5).
struct ExchangePlanTests {
    static let schedule = ExchangeSchedule(timeout: .seconds(2), attempts: 3, firstDelay: .milliseconds(250), grace: .seconds(10))

    /// H2: the short attempts before the last; the last keeps the app's full request timeout.
    @Test func lastPlannedAttemptKeepsTheRequestTimeout() {
        let plan = ExchangePlan(schedule: Self.schedule, requestTimeout: .seconds(30), graceLeft: .seconds(10))
        #expect(plan.attempt(0, elapsed: .zero)! == (.zero, .seconds(2)))
        #expect(plan.attempt(1, elapsed: .seconds(2))! == (.milliseconds(250), .seconds(2)))
        #expect(plan.attempt(2, elapsed: .milliseconds(4250))! == (.milliseconds(500), .seconds(30)))
    }

    /// H2: after fast failures, more attempts while one still starts a margin before the grace
    /// ends (and within the request timeout); none after it.
    @Test func fastFailuresAreRetriedWhileTheGraceLasts() {
        let plan = ExchangePlan(schedule: Self.schedule, requestTimeout: .seconds(30), graceLeft: .seconds(10))
        let extra = plan.attempt(3, elapsed: .seconds(1))
        #expect(extra?.pause == .seconds(1) && extra?.timeout == .seconds(30))
        #expect(plan.attempt(4, elapsed: .seconds(3))?.pause == .seconds(2))
        #expect(plan.attempt(4, elapsed: .seconds(7)) == nil)  // 7 + 2 s is past 10 s less the margin
        #expect(plan.attempt(3, elapsed: .seconds(31)) == nil)
    }

    /// A bound chain's retry is accepted whenever it comes: no burst of extra attempts.
    @Test func boundChainsGetNoExtraAttempts() {
        let plan = ExchangePlan(schedule: Self.schedule, requestTimeout: .seconds(30), graceLeft: .seconds(300), retriesWhileGraceLasts: false)
        #expect(plan.attempt(2, elapsed: .seconds(4))?.timeout == .seconds(30))
        #expect(plan.attempt(3, elapsed: .seconds(5)) == nil)
    }

    /// H1: a takeover late in the grace gets only what is left; with nothing left, one attempt.
    @Test func takeoverGetsOnlyTheGraceLeft() {
        let late = ExchangeSchedule(timeout: .seconds(2), attempts: 3, firstDelay: .milliseconds(250), grace: .seconds(3))
        let plan = ExchangePlan(schedule: late, requestTimeout: .seconds(30), graceLeft: .seconds(3))
        #expect(late.attempts == 1)
        #expect(plan.attempt(0, elapsed: .zero)?.timeout == .seconds(30))
        #expect(plan.attempt(1, elapsed: .seconds(1))?.pause == .milliseconds(500))  // a fast failure: once more
        #expect(plan.attempt(1, elapsed: .milliseconds(1600)) == nil)  // 1.6 + 0.5 s is past 3 s less the margin
    }

    /// The lease before each attempt covers the attempt, the pause after it and some slack.
    @Test func leaseCoversTheAttemptAndThePauseAfterIt() {
        let plan = ExchangePlan(schedule: Self.schedule, requestTimeout: .seconds(30), graceLeft: .seconds(10))
        #expect(plan.lease(ofAttempt: 0) == .seconds(2) + .milliseconds(250) + ExchangePlan.leaseSlack)
        #expect(plan.lease(ofAttempt: 2) == .seconds(30) + .seconds(1) + ExchangePlan.leaseSlack)
    }

    /// M5: a claim with an uptime reading ignores the wall clock, which the user can move.
    @Test func claimLeaseRunsOnUptimeNotTheWallClock() {
        let bundle = TokenBundle(token: "t", expiresAt: Date(), chainID: "c", generation: 4)
        let now = Date()
        let claim = ExchangeClaim(owner: "o", chainID: "c", generation: 4, startedAt: now, lease: 5, renewedAtUptime: 1000)
        #expect(claim.isLive(for: bundle, at: now.addingTimeInterval(3600), uptime: 1003))   // wall clock an hour ahead
        #expect(claim.isLive(for: bundle, at: now.addingTimeInterval(-3600), uptime: 1003))  // or behind
        #expect(!claim.isLive(for: bundle, at: now, uptime: 1006))  // the lease ran out
        #expect(!claim.isLive(for: bundle, at: now, uptime: 10))    // a reading from an earlier boot
        let legacy = ExchangeClaim(owner: "o", chainID: "c", generation: 4, startedAt: now, lease: 5)
        #expect(legacy.isLive(for: bundle, at: now.addingTimeInterval(3), uptime: 0))  // written before uptime: the wall clock
    }
}

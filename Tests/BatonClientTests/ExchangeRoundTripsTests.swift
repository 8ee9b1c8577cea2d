@testable import BatonClient
import Foundation
import Testing

/// The exchange attempts' timer (RFC 6298 over whole exchange requests) as a pure value, and a
/// session on a slow network through the real server.
struct ExchangeRoundTripsTests {
    static let floor = Duration.seconds(2)
    static let ceiling = ExchangeRoundTrips.ceiling(grace: .seconds(10), firstDelay: .milliseconds(250), requestTimeout: .seconds(30))

    /// With the defaults, two attempts and the first pause still fit the 10 s grace.
    @Test func ceilingKeepsTwoAttemptsInsideTheGrace() {
        #expect(Self.ceiling == .milliseconds(4875))
        let schedule = ExchangeSchedule(timeout: Self.ceiling, attempts: 3, firstDelay: .milliseconds(250), grace: .seconds(10))
        #expect(schedule.attempts == 2)
        #expect(ExchangeRoundTrips.ceiling(grace: .seconds(300), firstDelay: .milliseconds(250), requestTimeout: .seconds(30)) == .seconds(10))
    }

    /// Before any answer, and on a fast network, attempts wait the configured timeout.
    @Test func fastAnswersKeepTheConfiguredTimeout() {
        var timer = ExchangeRoundTrips()
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling) == Self.floor)
        for _ in 0..<20 { timer.answered(after: .milliseconds(120)) }
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling) == Self.floor)
    }

    /// Answers 0.6-2.5 s late (the benchmark's slow-answer network): the wait grows past the
    /// slowest answer seen, and stays within the ceiling.
    @Test func slowAnswersLengthenTheWaitPastThem() {
        var timer = ExchangeRoundTrips()
        let times: [Duration] = [.milliseconds(2400), .milliseconds(700), .milliseconds(1900), .milliseconds(2500), .milliseconds(1100)]
        for time in times + times { timer.answered(after: time) }
        let timeout = timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling)
        #expect(timeout > .milliseconds(2500))
        #expect(timeout <= Self.ceiling)
    }

    /// A timeout doubles the next wait (up to the ceiling) until an answer comes again.
    @Test func timeoutsBackOffUntilAnAnswer() {
        var timer = ExchangeRoundTrips()
        timer.timedOut()
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling) == .seconds(4))
        timer.timedOut()
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling) == Self.ceiling)
        timer.answered(after: .milliseconds(150))
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: Self.ceiling) == Self.floor)
    }

    /// A ceiling below the floor (a strict server's tiny grace) leaves the floor: the schedule
    /// cuts that to the grace itself.
    @Test func theFloorWinsOverALowCeiling() {
        var timer = ExchangeRoundTrips()
        timer.answered(after: .seconds(3))
        #expect(timer.attemptTimeout(floor: Self.floor, ceiling: .seconds(1)) == Self.floor)
    }
}

/// Through the real server: every exchange answer 2.4 s late. The first exchange pays for the
/// fixed 2 s cut (a later slot reads a cut attempt's late answer, or its last attempt reads its
/// own, H2), and learns the answer's time either way; the later ones wait long enough and send
/// one request each. Before the timer every exchange sent three (two cut, the last read).
@Suite(.ownThreads) struct SlowNetworkExchangeTests {
    @Test func laterExchangesOnASlowNetworkSendOneRequestEach() async throws {
        let server = try startServer([])
        let relay = try TCPRelay(to: server.port, fault: .delay(2.4), faultyAnswers: 1000)
        defer { relay.close() }
        let clock = TestClock()
        let session = BatonSession(
            configuration: BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(relay.port)")!, appName: "BatonClientTests/1",
                                              requestTimeout: 20, expiryMargin: 0, now: clock.now),
            store: MemoryCredentialStore())
        try await session.loginAlice()
        clock.advance(by: pastTheLifetime)
        #expect(try await session.get("/v1/verify") == 200)
        // The first exchange's 2 s attempt cannot read a 2.4 s answer; the relay counts the
        // attempts whose answer it saw, and one the client abandoned may close before its answer
        // arrives, so only the first exchange's success is certain here.
        #expect(relay.faultedAnswers >= 1)
        for exchange in 2...4 {
            clock.advance(by: pastTheLifetime)
            let before = relay.faultedAnswers
            #expect(try await session.get("/v1/verify") == 200)
            #expect(relay.faultedAnswers - before == 1, "exchange \(exchange) sent \(relay.faultedAnswers - before) requests")
        }
        #expect(await session.generation == 4)
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }
}

/// The attempts of one exchange, as a pure value (tested without a network): the schedule's
/// short attempts, the last of them with the app's full request timeout (H2: a slow network's
/// answer to the last attempt is read, not cut), then, when every planned attempt failed fast
/// (refused, reset, 5xx), more attempts while a new one still reaches the server inside the
/// grace that is left and the app's request still has time. The claim's lease is renewed before
/// each attempt and covers that attempt and the pause after it.
struct ExchangePlan: Sendable, Equatable {
    /// The planned attempts, fitted to `graceLeft`.
    let schedule: ExchangeSchedule
    /// The app's request timeout: the last attempt's, and the bound on extra attempts.
    let requestTimeout: Duration
    /// Of the server's retry grace, what is left when the first attempt starts (all of it for a
    /// fresh exchange; less for a takeover of a claim whose owner started earlier).
    let graceLeft: Duration
    /// Whether fast failures get more attempts after the planned ones: only where a later
    /// retry would come too late (a Bearer chain's grace). A bound chain's retry is accepted
    /// whenever it comes (its key proves it), so its next request retries instead, and an
    /// outage costs no burst of requests.
    let retriesWhileGraceLasts: Bool

    /// An extra attempt starts at least this long before the grace ends.
    static let graceMargin: Duration = .seconds(1)
    /// Added to a lease beyond its attempt and pause: the store's own writes, a late deadline's
    /// window to read an answer.
    static let leaseSlack: Duration = .seconds(2)

    /// A plan for `schedule` (fitted to the grace left), with the app's `requestTimeout`.
    init(schedule: ExchangeSchedule, requestTimeout: Duration, graceLeft: Duration, retriesWhileGraceLasts: Bool = true) {
        self.schedule = schedule
        self.requestTimeout = max(requestTimeout, schedule.timeout)
        self.graceLeft = graceLeft
        self.retriesWhileGraceLasts = retriesWhileGraceLasts
    }

    /// The pause before attempt `n` (0-based) and its timeout, `elapsed` after the first
    /// attempt started; nil when no attempt `n` is to be made.
    func attempt(_ n: Int, elapsed: Duration) -> (pause: Duration, timeout: Duration)? {
        if n < schedule.attempts {
            let pause = n == 0 ? Duration.zero : schedule.delays[n - 1]
            let isLast = n == schedule.attempts - 1 && !SimulationMutant.lastAttemptCut.isActive
            return (pause, isLast ? requestTimeout : schedule.timeout)
        }
        guard retriesWhileGraceLasts else { return nil }
        let pause = extraPause(n)
        guard elapsed + pause < graceLeft - Self.graceMargin, elapsed + pause < requestTimeout else { return nil }
        return (pause, requestTimeout)
    }

    /// The lease the claim gets before attempt `n`: its timeout, the longest pause after it, slack.
    func lease(ofAttempt n: Int) -> Duration {
        let timeout = n < schedule.attempts - 1 ? schedule.timeout : requestTimeout
        let nextPause = n + 1 < schedule.attempts ? schedule.delays[n] : extraPause(n + 1)
        return timeout + nextPause + Self.leaseSlack
    }

    /// The pause before extra attempt `n` (n >= schedule.attempts): doubling from the schedule's
    /// last pause, at most 4 s.
    private func extraPause(_ n: Int) -> Duration {
        var pause = (schedule.delays.last ?? .milliseconds(250)) * 2
        for _ in schedule.attempts..<max(schedule.attempts, n) { pause = min(pause * 2, .seconds(4)) }
        return min(pause, .seconds(4))
    }
}

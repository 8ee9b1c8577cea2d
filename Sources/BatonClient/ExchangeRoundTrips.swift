/// How long this network takes to answer an exchange, and so how long an exchange attempt
/// waits before it is given up and tried again: RFC 6298's retransmission timer, applied to
/// whole exchange requests. A pure value (tested without a network).
///
/// The configured `exchangeTimeout` is the floor. On a network whose answers come later than
/// that (a slow radio, a loaded server), a fixed timeout cuts every slow answer and pays a
/// retry for it (the server answers it under R3a, but it is a second request each time); the
/// timer learns the answers' time instead and waits a little longer than they take. A timeout
/// doubles the next exchange's wait (RFC 6298 §5.5) until an answer comes again. Every attempt
/// is an HTTP request of its own, so each answer's time is unambiguous (Karn's rule is moot).
struct ExchangeRoundTrips: Sendable, Equatable {
    /// SRTT: the smoothed answer time, nil before the first answer.
    private(set) var smoothed: Duration?
    /// RTTVAR: how much answer times vary.
    private(set) var variation: Duration = .zero
    /// Attempts timed out since the last answer (each doubles the wait, up to the ceiling).
    private(set) var timeouts = 0

    /// The smallest allowance for variation (RFC 6298's clock granularity G).
    static let granularity: Duration = .milliseconds(100)

    /// An answer (any status) came `time` after its attempt was sent.
    mutating func answered(after time: Duration) {
        let time = max(time, .zero)
        if let smoothed {
            // RTTVAR ← 3/4 RTTVAR + 1/4 |SRTT − R|, then SRTT ← 7/8 SRTT + 1/8 R.
            let deviation = smoothed > time ? smoothed - time : time - smoothed
            variation = variation * 0.75 + deviation * 0.25
            self.smoothed = smoothed * 0.875 + time * 0.125
        } else {
            smoothed = time
            variation = time / 2
        }
        timeouts = 0
    }

    /// An attempt got no answer within its timeout.
    mutating func timedOut() { timeouts = min(timeouts + 1, 8) }

    /// The timeout for the next exchange's attempts: SRTT + max(G, 4·RTTVAR), doubled per
    /// timeout since the last answer, never below `floor` (the configured `exchangeTimeout`)
    /// nor above `ceiling` (so that a retry still fits the server's grace).
    func attemptTimeout(floor: Duration, ceiling: Duration) -> Duration {
        var timeout = floor
        if let smoothed { timeout = max(floor, smoothed + max(Self.granularity, variation * 4)) }
        for _ in 0..<timeouts where timeout < ceiling { timeout *= 2 }
        return max(floor, min(timeout, ceiling))
    }

    /// The ceiling for a schedule fitted to `grace`: two attempts and the first pause still fit
    /// it, and each attempt takes at most a third of the app's request timeout.
    static func ceiling(grace: Duration, firstDelay: Duration, requestTimeout: Duration) -> Duration {
        min((grace - firstDelay) / 2, requestTimeout / 3)
    }
}

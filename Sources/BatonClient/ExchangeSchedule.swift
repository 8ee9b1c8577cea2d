/// When the attempts of one exchange start, cut to those that fit the server's retry grace.
///
/// The server commits an exchange when the first attempt reaches it, at the earliest the moment
/// it is sent, and recognises a repeat as a lost-response retry (R3a) only within its grace from
/// then. An attempt is kept only if it *ends* (answer or timeout) within the grace counted from
/// the first attempt's start: every request the server sees for it arrives inside the grace,
/// whatever the network's delay. A pure value, so the arithmetic is tested without a server.
public struct ExchangeSchedule: Sendable, Equatable {
    /// Time for one attempt.
    public let timeout: Duration
    /// The pauses before each retry (empty when only one attempt fits).
    public let delays: [Duration]
    /// The grace the schedule was fitted to.
    public let grace: Duration

    /// `attempts` attempts of `timeout` each, the first retry after `firstDelay` and each further
    /// pause doubled, cut to what ends within `grace`. One attempt is always made; when even it
    /// does not fit, its timeout is cut to the grace.
    public init(timeout: Duration, attempts: Int, firstDelay: Duration, grace: Duration) {
        self.grace = grace
        self.timeout = grace > .zero ? min(timeout, grace) : timeout
        var delays: [Duration] = []
        var end = self.timeout
        var delay = firstDelay
        for _ in 1..<max(1, attempts) {
            let next = end + delay + self.timeout
            guard next <= grace else { break }
            delays.append(delay)
            end = next
            delay *= 2
        }
        self.delays = delays
    }

    /// How many attempts are made.
    public var attempts: Int { delays.count + 1 }

    /// When the last attempt ends at the latest, from the first one's start.
    public var worstCase: Duration { delays.reduce(timeout * attempts, +) }
}

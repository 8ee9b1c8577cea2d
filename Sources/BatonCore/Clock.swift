import Glibc

/// The source of "now" for every rule. Injected so tests can move time without sleeping.
package protocol WallClock: Sendable {
    /// The current time.
    func now() -> Instant
}

/// The system's real-time clock (`CLOCK_REALTIME`).
package struct SystemClock: WallClock {
    package init() {}

    package func now() -> Instant {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Instant(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }
}

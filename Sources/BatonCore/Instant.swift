/// A point in time, in whole milliseconds since the Unix epoch (UTC).
///
/// Baton stores every time as an `INTEGER` of this unit, so an `Instant` round-trips
/// through SQLite without loss.
package struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    package var milliseconds: Int64

    package init(milliseconds: Int64) { self.milliseconds = milliseconds }

    package static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// The instant `duration` after this one.
    package static func + (lhs: Instant, rhs: Duration) -> Instant {
        Instant(milliseconds: lhs.milliseconds &+ rhs.wholeMilliseconds)
    }

    /// The instant `duration` before this one.
    package static func - (lhs: Instant, rhs: Duration) -> Instant {
        Instant(milliseconds: lhs.milliseconds &- rhs.wholeMilliseconds)
    }

    /// The span from `rhs` to `lhs`.
    package static func - (lhs: Instant, rhs: Instant) -> Duration {
        .milliseconds(lhs.milliseconds - rhs.milliseconds)
    }

    /// Whole seconds since the epoch, rounded down (`X-Baton-Auth-Time`).
    package var epochSeconds: Int64 {
        milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
    }

    /// RFC 3339 in UTC with second precision, e.g. `2026-11-22T04:15:00Z`.
    package var rfc3339: String { RFC3339.format(self) }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T04:15:00.250Z`.
    package var rfc3339Milliseconds: String { RFC3339.formatMilliseconds(self) }

    package var description: String { rfc3339 }
}

extension Duration {
    /// The duration in whole milliseconds, truncated toward zero.
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole seconds, rounded up (for `Retry-After`, `expires_in`).
    package var wholeSecondsRoundedUp: Int64 {
        let ms = wholeMilliseconds
        return ms <= 0 ? 0 : (ms + 999) / 1000
    }
}

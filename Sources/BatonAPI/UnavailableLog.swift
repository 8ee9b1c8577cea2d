import BatonCore
import BatonSync

/// One line on standard output when the server answers 503 `unavailable`, naming what failed:
/// `{"event":"unavailable","time","path","reason","not_logged"}`. The answer says only
/// "temporarily unavailable" and the access log only the code, so without this line an
/// operator could not tell a database lock from a PostgreSQL connect timeout. At most one
/// line a second, so that an outage does not flood the log; `not_logged` counts the refusals
/// left out since the previous line. The reason is the server's own explanation (a PostgreSQL
/// address is shown without its password; never a token).
final class UnavailableLog: Sendable {
    private let output: AccessLog
    /// The second of the last line, and the refusals not logged since.
    private let state = Locked<(second: Int64, notLogged: Int64)>((Int64.min, 0))

    init(output: AccessLog) { self.output = output }

    /// Notes a 503 `unavailable` answered on `path` because of `reason`.
    func record(path: String, reason: String, at now: Instant) {
        let second = now.milliseconds / 1000
        let notLogged = state.withLock { state -> Int64? in
            guard second != state.second else {
                state.notLogged += 1
                return nil  // this second has its line
            }
            defer { state = (second, 0) }
            return state.notLogged
        }
        if let notLogged { output.append(line: Self.line(path: path, reason: reason, notLogged: notLogged, at: now)) }
    }

    /// The line for one refusal (pure).
    static func line(path: String, reason: String, notLogged: Int64, at now: Instant) -> String {
        JSONValue.object([
            "event": .string("unavailable"), "time": .string(now.rfc3339), "path": .string(path),
            "reason": .string(reason), "not_logged": .int(notLogged),
        ]).text
    }
}

/// Why a test PostgreSQL cluster could not be set up or driven. Each case names what failed so
/// a test's failure message points at the step (and carries the server's log where it helps).
package enum PostgresClusterError: Error, Equatable, CustomStringConvertible {
    /// No /usr/lib/postgresql/<version>/bin with initdb, postgres and pg_ctl.
    case serverBinariesMissing
    /// The unprivileged OS user the servers run as could not be created or found.
    case userUnavailable(String)
    /// A command (initdb, pg_basebackup, psql, pg_ctl ...) exited with a failure.
    case commandFailed(command: String, status: Int32, output: String)
    /// A server did not reach the awaited state in time (log tail attached).
    case timedOut(waitingFor: String, log: String)
    /// A step needs a standby but the cluster was made without one.
    case noStandby

    package var description: String {
        switch self {
        case .serverBinariesMissing:
            "PostgreSQL's server binaries are not installed (no /usr/lib/postgresql/<version>/bin/initdb; ./scripts/test installs Debian's postgresql)"
        case .userUnavailable(let reason): "the unprivileged user for PostgreSQL: \(reason)"
        case .commandFailed(let command, let status, let output): "\(command) exited \(status): \(output)"
        case .timedOut(let condition, let log): "timed out waiting for \(condition); server log:\n\(log)"
        case .noStandby: "the cluster has no standby"
        }
    }
}

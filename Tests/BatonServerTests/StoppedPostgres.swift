import BatonTestSupport
import Foundation
import Glibc

/// Every PostgreSQL backend serving a database stopped with SIGSTOP (a stalled server, as a full
/// disk or a lock pile-up makes one), until `resume()` or the end of the value's life.
final class StoppedPostgresBackends {
    let pids: [pid_t]
    private var resumed = false

    /// Stops the backends of `uri`'s database other than the query's own.
    init(_ uri: String) throws {
        pids = try queryDatabase("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", at: uri)
            .compactMap { row in row.first.flatMap { pid_t($0) } }
        for pid in pids { kill(pid, SIGSTOP) }
    }

    /// Lets them go on (once).
    func resume() {
        guard !resumed else { return }
        resumed = true
        for pid in pids { kill(pid, SIGCONT) }
    }

    deinit { resume() }
}

import Glibc
import Synchronization

/// The postmasters this test process started and has not stopped, so that they are stopped
/// when the process exits even if their `PostgresNode` never deinitializes (a cluster kept
/// in a `static` for a whole test run; Swift never destroys statics). An `atexit` handler
/// sends each an immediate shutdown (SIGQUIT). A crashed runner skips `atexit`: then
/// scripts/test's cleanup stops them by the PIDs in their postmaster.pid files.
enum PostmasterRegistry {
    private static let running = Mutex<Set<pid_t>>([])
    private static let handlerInstalled: Bool = {
        atexit { PostmasterRegistry.stopAll() }
        return true
    }()

    /// Records a postmaster just started.
    static func started(_ pid: pid_t) {
        _ = handlerInstalled
        running.withLock { _ = $0.insert(pid) }
    }

    /// Forgets a postmaster that has exited.
    static func exited(_ pid: pid_t) {
        running.withLock { _ = $0.remove(pid) }
    }

    private static func stopAll() {
        for pid in running.withLock({ $0 }) { kill(pid, SIGQUIT) }
    }
}

import Foundation
import Glibc

/// How a child ended: its exit code, or the signal that killed it.
struct ChildTermination: Sendable, Equatable {
    var reason: ChildProcess.TerminationReason
    /// The exit code (`.exit`) or the signal number (`.uncaughtSignal`).
    var status: Int32
}

/// The exit of one spawned child, and the only code here that reaps one. A thread of its own
/// waits until the child has exited without reaping it (`waitid` with `WNOWAIT`: the zombie
/// keeps its PID from being reused), then reaps it with `waitpid` under the lock `send`
/// holds while it signals. So a signal reaches this child or no one, never a process that
/// was given the PID again, and `isRunning` and `wait()` read the one recorded answer. The
/// thread blocks in the kernel: no polling, and it ends with the child.
final class ChildExit: @unchecked Sendable {
    let pid: pid_t
    private let condition = NSCondition()
    private var termination: ChildTermination?  // under `condition`

    /// Starts watching `pid`, a child of this process that nothing else waits for.
    init(watching pid: pid_t) {
        self.pid = pid
        let thread = Thread { [self] in reapWhenExited() }
        thread.name = "ChildExit \(pid)"
        thread.start()
    }

    /// Whether the child has not been reaped yet.
    var isRunning: Bool {
        condition.lock()
        defer { condition.unlock() }
        return termination == nil
    }

    /// Blocks until the child has exited and been reaped; how it ended.
    func wait() -> ChildTermination {
        condition.lock()
        defer { condition.unlock() }
        while termination == nil { condition.wait() }
        return termination!
    }

    /// Sends `signal` to the child unless it has been reaped (then there is no one to send to).
    func send(_ signal: Int32) {
        condition.lock()
        defer { condition.unlock() }
        if termination == nil { kill(pid, signal) }
    }

    private func reapWhenExited() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1, errno == EINTR {}
        condition.lock()
        defer { condition.unlock() }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, 0) } while reaped == -1 && errno == EINTR
        termination = reaped == pid ? Self.decode(status) : ChildTermination(reason: .exit, status: -1)  // ECHILD: reaped elsewhere
        condition.broadcast()
    }

    /// WIFSIGNALED/WTERMSIG/WEXITSTATUS, which Swift does not import (function-like macros).
    private static func decode(_ status: Int32) -> ChildTermination {
        let signal = status & 0x7f
        return signal == 0 ? ChildTermination(reason: .exit, status: (status >> 8) & 0xff) : ChildTermination(reason: .uncaughtSignal, status: signal)
    }
}

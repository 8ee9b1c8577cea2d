import Foundation
import Glibc

/// A child process started with `posix_spawn`: the part of Foundation's `Process` API the
/// tests use, so that no test calls `Process.run()`. Swift 6.3.1's `run()` copies a whole
/// 256-byte `d_name` out of glibc's readdir buffer while it lists the open descriptors
/// (swift-corelibs-foundation pull request 5472, fixed after this toolchain), and now and
/// then that over-read hits an unmapped page and kills the test runner with SIGSEGV.
///
/// Set `executableURL` (a path: no PATH search), `arguments`, `environment` (nil: the test
/// process's own without its `BATON_*` variables, `ChildEnvironment`), `currentDirectoryURL` and the standard streams (nil: the test process's
/// own; a `Pipe`, a `FileHandle`, or `FileHandle.nullDevice`), then `run()` it once. The
/// child inherits no other descriptor and runs in a process group of its own with a clean
/// signal mask (see `PosixSpawn`). `waitUntilExit()` blocks its thread: call it off the
/// cooperative pool (`offPool`), as with `Process`.
package final class ChildProcess: @unchecked Sendable {
    /// Why the child ended.
    package enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    package var executableURL: URL?
    /// The arguments after argv[0] (which is the executable's path).
    package var arguments: [String] = []
    package var environment: [String: String]?
    package var currentDirectoryURL: URL?
    package var standardInput: (any ChildStream)?
    package var standardOutput: (any ChildStream)?
    package var standardError: (any ChildStream)?

    // Set once by `run()`, before any other thread can see the child; read-only after.
    private var exit: ChildExit?

    /// A child not started yet.
    package init() {}

    /// Starts the child, then closes the parent's copies of the pipe ends it was given.
    /// - Throws: `ChildProcessError` when it could not be started (nothing to wait for then).
    package func run() throws(ChildProcessError) {
        precondition(exit == nil, "ChildProcess.run() called twice")
        guard let executable = executableURL?.path else { preconditionFailure("ChildProcess.run() without executableURL") }
        let streams: [(target: Int32, stream: (any ChildStream)?, childReads: Bool)] =
            [(STDIN_FILENO, standardInput, true), (STDOUT_FILENO, standardOutput, false), (STDERR_FILENO, standardError, false)]
        let redirections = streams.compactMap { target, stream, childReads in
            stream.map { PosixSpawn.Redirection(target: target, source: $0.descriptorForChild(childReads: childReads), childReads: childReads) }
        }
        // The runner's BATON_ knobs are not the child's settings (ChildEnvironment).
        let pid = try PosixSpawn.spawn(executable, arguments: arguments, environment: environment ?? ChildEnvironment.make(),
                                       directory: currentDirectoryURL?.path, redirections: redirections)
        exit = ChildExit(watching: pid)
        for (_, stream, childReads) in streams { stream?.closeChildEnd(childReads: childReads) }
    }

    /// The child's PID (0 before `run()`). After the child is reaped it may name another
    /// process: signal the child with `send`, not `kill(processIdentifier, ...)`.
    package var processIdentifier: pid_t { exit?.pid ?? 0 }

    /// Whether the child was started and has not been reaped yet.
    package var isRunning: Bool { exit?.isRunning ?? false }

    /// Blocks until the child has exited (at once when it was never started).
    package func waitUntilExit() { _ = exit?.wait() }

    /// The exit code, or the signal number when `terminationReason` is `.uncaughtSignal`.
    /// The child must have exited (`waitUntilExit()`), as with `Process`.
    package var terminationStatus: Int32 { termination.status }

    /// Whether the child exited or was killed by a signal. The child must have exited.
    package var terminationReason: TerminationReason { termination.reason }

    /// Sends `signal` to the child while it runs; after it was reaped (or if it never
    /// started), nothing: its PID may belong to another process by then.
    package func send(_ signal: Int32) { exit?.send(signal) }

    /// Sends SIGTERM (see `send`).
    package func terminate() { send(SIGTERM) }

    /// Sends SIGINT (see `send`).
    package func interrupt() { send(SIGINT) }

    private var termination: ChildTermination {
        guard let exit else { preconditionFailure("ChildProcess not started") }
        precondition(!exit.isRunning, "ChildProcess still running")
        return exit.wait()
    }
}

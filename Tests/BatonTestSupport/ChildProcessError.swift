import Glibc

/// Why a `ChildProcess` did not start. The child never ran: there is no process to wait for.
package enum ChildProcessError: Error, Equatable, CustomStringConvertible {
    /// `posix_spawn` refused: `errno` is its result (ENOENT or EACCES for the executable, for
    /// one; glibc reports a failed exec here, not as a child exiting 127).
    case spawnFailed(executable: String, errno: Int32)
    /// Preparing the spawn failed: `call` (a `posix_spawn_file_actions_*` or
    /// `posix_spawnattr_*` function) returned `errno`.
    case setupFailed(call: String, errno: Int32)

    package var description: String {
        switch self {
        case .spawnFailed(let executable, let code): "cannot spawn \(executable): \(String(cString: strerror(code))) (errno \(code))"
        case .setupFailed(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

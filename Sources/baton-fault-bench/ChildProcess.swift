import CSpawn
import Foundation
import Glibc

/// A child process started with posix_spawn (not Foundation's Process, whose run() can crash on
/// this toolchain, scripts/test explains), with pipes to its standard input and output. Each
/// output line goes to `onLine` on a reader thread; `onExit` gets the wait status once, after
/// the output ended.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private let input: Int32
    private let lock = NSLock()
    private var inputOpen = true

    enum SpawnError: Error, CustomStringConvertible {
        case failed(String, Int32)
        var description: String {
            switch self { case .failed(let path, let code): "cannot start \(path): \(String(cString: strerror(code)))" }
        }
    }

    /// Starts `path` with `arguments`; standard error is inherited.
    init(_ path: String, _ arguments: [String], onLine: @escaping @Sendable (ChildProcess, String) -> Void,
         onExit: @escaping @Sendable (ChildProcess, Int32) -> Void) throws {
        var toChild: [Int32] = [0, 0], fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw SpawnError.failed(path, errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        // Nothing else of this process reaches the child: a relay socket held open by a child
        // would keep a connection the relay closed alive.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard code == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw SpawnError.failed(path, code)
        }
        self.pid = pid
        input = toChild[1]
        let output = fromChild[0]
        let child = pid
        Thread { [self] in
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    onLine(self, String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            close(output)
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            onExit(self, status)
        }.start()
    }

    /// Writes one line to the child's standard input (ignored once the input is closed).
    func send(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        guard inputOpen else { return }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// Closes the child's standard input (it reads end of file).
    func closeInput() {
        lock.lock()
        defer { lock.unlock() }
        guard inputOpen else { return }
        inputOpen = false
        close(input)
    }

    /// Sends `signal` to the child.
    func signal(_ signal: Int32) { kill(pid, signal) }

    deinit { closeInput() }
}

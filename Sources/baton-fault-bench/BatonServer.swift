import Foundation
import Glibc

/// A real `baton serve` on a free loopback port with a fresh database in `directory`: scaled-
/// down token lifetimes, the DEFAULT retry grace (the benchmark's point), no per-user chain
/// limit (every device logs in as one user), no access log.
final class BatonServer: @unchecked Sendable {
    let port: UInt16
    private let process: ChildProcess
    private let exited = DispatchSemaphore(value: 0)

    enum ServerError: Error, CustomStringConvertible {
        case didNotStart(String)
        var description: String {
            switch self { case .didNotStart(let why): "baton serve did not start: \(why)" }
        }
    }

    init(binary: String, directory: String, tokenLifetime: TimeInterval) throws {
        let listening = DispatchSemaphore(value: 0)
        let found = Found()
        let exited = self.exited
        process = try ChildProcess(binary, ["serve", "--db", directory + "/baton.db", "--listen", "127.0.0.1:0",
                                            "--token-ttl", "\(Int(tokenLifetime * 1000))ms", "--max-chains-per-user", "0",
                                            "--access-log", "off"],
                                   onLine: { _, line in
                                       guard found.port == nil, line.contains("listening"), let range = line.range(of: "127.0.0.1:") else { return }
                                       found.port = UInt16(line[range.upperBound...].prefix { $0.isNumber })
                                       listening.signal()
                                   },
                                   onExit: { _, _ in
                                       listening.signal()
                                       exited.signal()
                                   })
        guard listening.wait(timeout: .now() + 60) == .success, let port = found.port else {
            process.signal(SIGKILL)
            throw ServerError.didNotStart("no \"listening\" line")
        }
        self.port = port
    }

    /// Adds a user with the real CLI, as an operator would.
    static func addUser(binary: String, directory: String, name: String, password: String) throws {
        let ended = DispatchSemaphore(value: 0)
        let result = Found()
        let adder = try ChildProcess(binary, ["admin", "user", "add", name, "--password-stdin", "--db", directory + "/baton.db"],
                                     onLine: { _, _ in }, onExit: { _, status in result.port = UInt16(truncatingIfNeeded: status); ended.signal() })
        adder.send(password)
        adder.closeInput()
        ended.wait()
        guard result.port == 0 else { throw ServerError.didNotStart("`baton admin user add` failed (status \(result.port ?? 0))") }
    }

    /// Stops the server (SIGTERM) and waits for it.
    func stop() {
        process.signal(SIGTERM)
        exited.wait()
    }

    /// A value set on one thread and read on another.
    private final class Found: @unchecked Sendable {
        private let lock = NSLock()
        private var value: UInt16?
        var port: UInt16? {
            get { lock.lock(); defer { lock.unlock() }; return value }
            set { lock.lock(); value = newValue; lock.unlock() }
        }
    }
}

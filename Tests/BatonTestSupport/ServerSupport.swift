import Foundation
import Glibc

/// The built products (the test bundle sits beside them).
package let productsDirectory: URL = {
    if let directory = ProcessInfo.processInfo.environment["BATON_PRODUCTS"] { return URL(fileURLWithPath: directory) }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
}()

package let batonBinary = productsDirectory.appendingPathComponent("baton").path

/// A `baton serve` process on a loopback port with its own temporary database.
package final class ServerProcess: @unchecked Sendable {
    package let directory: String
    package let databasePath: String
    package let process = ChildProcess()
    package let stdoutPath: String
    package let stderrPath: String
    package private(set) var port: UInt16 = 0
    package let arguments: [String]

    /// Extra environment for the server process only.
    package let environment: [String: String]

    /// Starts the server; `arguments` are extra `serve` flags. `database` is `--db` (default:
    /// `baton.db` in the directory), e.g. a PostgreSQL URI.
    package init(_ arguments: [String] = [], directory: String? = nil, database: String? = nil, environment: [String: String] = [:]) throws {
        self.environment = environment
        self.directory = directory ?? (NSTemporaryDirectory() + "baton-e2e-" + UUID().uuidString)
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        databasePath = database ?? (self.directory + "/baton.db")
        self.arguments = arguments
        stdoutPath = self.directory + "/stdout-\(UUID().uuidString).log"
        stderrPath = self.directory + "/stderr-\(UUID().uuidString).log"
        try start()
    }

    private func start() throws {
        for path in [stdoutPath, stderrPath] where !FileManager.default.createFile(atPath: path, contents: nil) {
            throw ServerError.didNotStart("cannot create \(path)")
        }
        process.executableURL = URL(fileURLWithPath: batonBinary)
        // The tests' PostgreSQL clusters run with fsync off (they kill processes, not machines):
        // a start on one must say it is a throwaway (PostgresDurabilityTests checks the refusal).
        let throwaway = databasePath.hasPrefix("postgres") && !arguments.contains("--unsafe-postgres-durability")
            ? ["--unsafe-postgres-durability"] : []
        process.arguments = ["serve", "--db", databasePath, "--listen", "127.0.0.1:0"] + throwaway + arguments
        process.environment = ChildEnvironment.make(environment)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        ServerRegistry.started(self)
        // Wait for the "listening" line (the server prints it once bound).
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: stdoutPath, encoding: .utf8), let line = text.split(separator: "\n").first,
               let range = line.range(of: #"127.0.0.1:"#) {
                let digits = line[range.upperBound...].prefix { $0.isNumber }
                port = UInt16(digits)!
                return
            }
            if !process.isRunning { break }
            usleep(5_000)  // polling a file for a condition, with a deadline
        }
        throw ServerError.didNotStart((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")
    }

    package enum ServerError: Error { case didNotStart(String) }

    /// Sends a signal and waits for the exit status (-1 for a server that never started:
    /// `deinit` runs after a failed `init` too).
    @discardableResult
    package func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        guard process.processIdentifier != 0 else { return -1 }
        if process.isRunning {
            process.send(signal)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    package var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    package var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// A new connection to the server.
    package func connect() throws -> HTTPConnection { try HTTPConnection(port: port) }

    /// One request on a fresh connection.
    package func request(_ method: String, _ path: String, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
        let connection = try connect()
        defer { connection.close() }
        return try connection.request(method, path, token: token, headers: headers, json: json)
    }

    /// Creates a user with the real CLI, as an operator would.
    package func addUser(_ name: String, password: String = "correct horse battery") throws {
        let (status, _, err) = try runBaton(["admin", "user", "add", name, "--password-stdin", "--db", databasePath], stdin: password + "\n")
        guard status == 0 else { throw ServerError.didNotStart("user add failed: \(err)") }
    }

    /// Logs in and returns the token bundle's JSON.
    package func login(_ username: String = "alice", device: String = "phone-1", headers: [(String, String)] = []) throws -> [String: Any] {
        let response = try request("POST", "/v1/login", headers: headers,
                                   json: #"{"username":"\#(username)","password":"correct horse battery","device_id":"\#(device)","device_class":"mobile"}"#)
        guard response.status == 200 else { throw ServerError.didNotStart("login failed: \(response.status) \(response.text)") }
        return response.json
    }

    deinit {
        stop(SIGKILL)
        try? FileManager.default.removeItem(atPath: directory)
        ServerRegistry.released(self)
    }
}

/// Runs the built `baton` with arguments and standard input; returns status, stdout, stderr.
package func runBaton(_ arguments: [String], stdin: String = "", environment: [String: String] = [:]) throws -> (Int32, String, String) {
    try runProduct("baton", arguments, stdin: stdin, environment: environment)
}

/// Runs the built product `name` (baton, baton-demo, ...) likewise.
package func runProduct(_ name: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:]) throws -> (Int32, String, String) {
    try runProgram(productsDirectory.appendingPathComponent(name).path, arguments, stdin: stdin, environment: environment)
}

/// Runs the program at `path` likewise (a system tool wrapping a product, e.g. prlimit).
package func runProgram(_ path: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:]) throws -> (Int32, String, String) {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ChildEnvironment.make(environment)
    let input = Pipe(), output = Pipe(), error = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = error
    try process.run()
    input.fileHandleForWriting.write(Data(stdin.utf8))
    try input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

/// A raw TCP connection speaking HTTP/1.1 by hand: exact bytes out, parsed responses in.
package final class HTTPConnection: @unchecked Sendable {
    package struct Response {
        package var status: Int
        package var headers: [String: String]
        package var body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
        package var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        package var error: String? { json["error"] as? String }
    }

    package enum ConnectionError: Error { case connect(Int32), closed, timeout, malformed }

    package let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`, from the loopback address `source` when given (the whole
    /// 127/8 is loopback: distinct sources look like distinct clients to a proxy).
    package init(port: UInt16, from source: String? = nil, timeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ConnectionError.connect(code)
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    package func close() { Glibc.close(fd) }

    /// The port this end of the connection has (nil if the socket has none).
    package var localPort: UInt16? {
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return named == 0 ? UInt16(bigEndian: local.sin_port) : nil
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ConnectionError.closed }
            offset += sent
        }
    }

    package func request(_ method: String, _ path: String, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "user-agent" }) { head += "User-Agent: BatonTests/1.0\r\n" }
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let json { head += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n" }
        try send(head + "\r\n" + (json ?? ""))
        return try readResponse(bodyless: method == "HEAD")
    }

    /// Reads one response (Content-Length framed; a HEAD response has no body whatever its length).
    package func readResponse(bodyless: Bool = false) throws -> Response {
        while true {
            if let end = find([13, 10, 13, 10]) {
                let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                let statusParts = head[0].split(separator: " ")
                guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw ConnectionError.malformed }
                var headers: [String: String] = [:]
                for line in head.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = bodyless ? 0 : Int(headers["content-length"] ?? "0") ?? 0
                let bodyStart = end + 4
                if buffer.count - bodyStart >= length {
                    let body = Array(buffer[bodyStart..<bodyStart + length])
                    buffer.removeFirst(bodyStart + length)
                    return Response(status: status, headers: headers, body: body)
                }
            }
            try fill()
        }
    }

    /// Whether the server closed the connection (reads EOF within the timeout).
    package func isClosedByServer() -> Bool {
        while true {
            do { try fill() } catch ConnectionError.closed { return true } catch { return false }
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count == 0 { throw ConnectionError.closed }
        if count < 0 { throw errno == EAGAIN ? ConnectionError.timeout : ConnectionError.closed }
        buffer += chunk[..<count]
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for index in 0...(buffer.count - pattern.count) where buffer[index] == pattern[0] && Array(buffer[index..<index + pattern.count]) == pattern {
            return index
        }
        return nil
    }
}

/// Runs `body` on `count` real threads released together.
package func race(threads count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = DispatchGroup(), finished = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        ready.enter()
        finished.enter()
        Thread {
            ready.leave()
            start.wait()
            body(index)
            finished.leave()
        }.start()
    }
    ready.wait()
    for _ in 0..<count { start.signal() }
    finished.wait()
}

/// Polls `condition` until true or the deadline passes (for time-based expiry, not ordering).
package func eventually(within seconds: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

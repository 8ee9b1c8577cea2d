import Foundation
import Glibc

package let haproxyBinary = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// A real HAProxy (Debian's package) on a loopback port, running deploy/haproxy/haproxy.cfg
/// and its baton-verify.lua as shipped, with only what an operator sets changed
/// (docs/deploy.md): the listening address (plain HTTP on the test's port instead of the TLS
/// and redirecting binds), the Lua file's path, the log target (its stderr: the test machine
/// has no syslog), the user to run as (kept when the test runs as root), and the two upstream
/// addresses (Baton and the application at the test's ports). Stopped and its files removed
/// on deinit, pass or fail.
package final class HAProxyProcess: @unchecked Sendable {
    package let directory: String
    package let port: UInt16
    package let process = ChildProcess()

    package init(batonPort: UInt16, appPort: UInt16) throws {
        guard let haproxyBinary else { throw ServerProcess.ServerError.didNotStart("haproxy is not installed (./scripts/test installs it)") }
        directory = NSTemporaryDirectory() + "baton-haproxy-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Reserved (bound, not listening, SO_REUSEADDR) until HAProxy listens on it, as for nginx.
        let reservation = try PortReservation()
        defer { reservation.release() }
        port = reservation.port
        try Self.configuration(batonPort: batonPort, appPort: appPort, port: port)
            .write(toFile: directory + "/haproxy.cfg", atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: directory + "/haproxy.log", contents: nil) else {
            throw ServerProcess.ServerError.didNotStart("cannot create \(directory)/haproxy.log")
        }
        process.executableURL = URL(fileURLWithPath: haproxyBinary)
        process.arguments = ["-f", directory + "/haproxy.cfg", "-db"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle(forWritingAtPath: directory + "/haproxy.log")
        process.standardError = FileHandle(forWritingAtPath: directory + "/haproxy.log")
        try process.run()
        let port = port
        let answers = { (try? HTTPConnection(port: port, timeoutSeconds: 1)).map { $0.close(); return true } ?? false }
        let ready = eventually(within: 15) { [process] in !process.isRunning || answers() } && process.isRunning
        guard ready else { throw ServerProcess.ServerError.didNotStart("haproxy: " + log) }
    }

    /// The shipped configuration with the test's address, paths and upstreams. Throws if a
    /// value to replace is not in the shipped file (it changed).
    static func configuration(batonPort: UInt16, appPort: UInt16, port: UInt16) throws -> String {
        var pairs = [
            ("bind :443 ssl crt /etc/ssl/baton/haproxy.pem alpn http/1.1", "bind 127.0.0.1:\(port)"), ("    bind :80\n", ""),
            ("    http-request redirect scheme https code 301 unless { ssl_fc }\n", ""),
            ("lua-load /etc/haproxy/baton-verify.lua", "lua-load \(repositoryRoot)/deploy/haproxy/baton-verify.lua"),
            ("log /dev/log local0", "log stderr format short local0"),
            ("127.0.0.1:8080", "127.0.0.1:\(batonPort)"), ("127.0.0.1:9000", "127.0.0.1:\(appPort)"),
        ]
        if geteuid() != 0 { pairs += [("    user haproxy\n", ""), ("    group haproxy\n", "")] }
        return try TraefikProcess.replacing(in: "deploy/haproxy/haproxy.cfg", pairs)
    }

    /// What HAProxy logged (its requests and alerts, on stderr).
    package var log: String { (try? String(contentsOfFile: directory + "/haproxy.log", encoding: .utf8)) ?? "" }

    package func request(_ method: String, _ path: String, from source: String? = nil, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
        let connection = try HTTPConnection(port: port, from: source)
        defer { connection.close() }
        return try connection.request(method, path, token: token, headers: headers, json: json)
    }

    deinit {
        if process.isRunning {
            process.send(SIGUSR1)  // soft stop: HAProxy finishes the requests in flight, then exits
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

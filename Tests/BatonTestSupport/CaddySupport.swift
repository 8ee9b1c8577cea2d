import Foundation
import Glibc

package let caddyBinary = ["/usr/bin/caddy", "/usr/local/bin/caddy"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// A real Caddy (Debian's package) on a loopback port, running deploy/caddy/Caddyfile as
/// shipped, with only what an operator sets changed (docs/deploy.md): the site address (plain
/// HTTP on the test's port instead of the host name) and the two upstream addresses (Baton and
/// the application at the test's ports). The test adds Caddy's global options in front: no
/// admin endpoint (several Caddys run at once, and the default is one fixed port), and its
/// state in the test's directory. Stopped and its files removed on deinit, pass or fail.
package final class CaddyProcess: @unchecked Sendable {
    package let directory: String
    package let port: UInt16
    package let process = ChildProcess()

    package init(batonPort: UInt16, appPort: UInt16) throws {
        guard let caddyBinary else { throw ServerProcess.ServerError.didNotStart("caddy is not installed (./scripts/test installs it)") }
        directory = NSTemporaryDirectory() + "baton-caddy-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Reserved (bound, not listening, SO_REUSEADDR) until Caddy listens on it, as for nginx.
        let reservation = try PortReservation()
        defer { reservation.release() }
        port = reservation.port
        let config = try Self.configuration(batonPort: batonPort, appPort: appPort, port: port, directory: directory)
        try config.write(toFile: directory + "/Caddyfile", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: caddyBinary)
        process.arguments = ["run", "--config", directory + "/Caddyfile", "--adapter", "caddyfile"]
        process.environment = ["HOME": directory, "XDG_CONFIG_HOME": directory + "/config", "XDG_DATA_HOME": directory + "/data",
                               "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        guard FileManager.default.createFile(atPath: directory + "/caddy.log", contents: nil) else {
            throw ServerProcess.ServerError.didNotStart("cannot create \(directory)/caddy.log")
        }
        process.standardError = FileHandle(forWritingAtPath: directory + "/caddy.log")
        try process.run()
        let port = port
        // Ready when it answers; a Caddy that refused its configuration has exited.
        let answers = { (try? HTTPConnection(port: port, timeoutSeconds: 1)).map { $0.close(); return true } ?? false }
        let ready = eventually(within: 15) { [process] in !process.isRunning || answers() } && process.isRunning
        guard ready else { throw ServerProcess.ServerError.didNotStart("caddy: " + log) }
    }

    /// The shipped Caddyfile with the test's site address and upstreams, after the test's
    /// global options. Throws if a value to replace is not in the shipped file (it changed).
    static func configuration(batonPort: UInt16, appPort: UInt16, port: UInt16, directory: String) throws -> String {
        var text = try String(contentsOfFile: repositoryRoot + "/deploy/caddy/Caddyfile", encoding: .utf8)
        for (shipped, test) in [("\nauth.example.com {", "\nhttp://127.0.0.1:\(port) {"), ("127.0.0.1:8080", "127.0.0.1:\(batonPort)"),
                                ("127.0.0.1:9000", "127.0.0.1:\(appPort)")] {
            guard text.contains(shipped) else { throw ServerProcess.ServerError.didNotStart("deploy/caddy/Caddyfile has no \(shipped)") }
            text = text.replacingOccurrences(of: shipped, with: test)
        }
        return """
            {
            \tadmin off
            \tdefault_bind 127.0.0.1
            \tstorage file_system \(directory)/data
            }

            """ + text
    }

    /// What Caddy logged (JSON lines on stderr).
    package var log: String { (try? String(contentsOfFile: directory + "/caddy.log", encoding: .utf8)) ?? "" }

    package func request(_ method: String, _ path: String, from source: String? = nil, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
        let connection = try HTTPConnection(port: port, from: source)
        defer { connection.close() }
        return try connection.request(method, path, token: token, headers: headers, json: json)
    }

    deinit {
        if process.isRunning {
            process.terminate()  // graceful: Caddy finishes the requests in flight, then exits
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

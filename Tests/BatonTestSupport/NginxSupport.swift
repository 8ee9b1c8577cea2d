import BatonHTTP
import Foundation
import Glibc

package let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
package let nginxBinary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
/// The headers-more module the shipped rules need (`more_clear_input_headers`): Debian's
/// libnginx-mod-http-headers-more-filter, loaded by /etc/nginx/modules-enabled on a real host.
package let nginxHeadersMoreModule = ["/usr/lib/nginx/modules/ngx_http_headers_more_filter_module.so",
                                      "/usr/share/nginx/modules/ngx_http_headers_more_filter_module.so"]
    .first { FileManager.default.fileExists(atPath: $0) }

/// A real nginx (Debian's) on a loopback port, running the shipped proxy rules
/// (deploy/nginx/conf.d/baton-zones.conf, snippets/baton-proxy.conf and the
/// snippets/baton-proxy-headers.conf it includes) verbatim. Only the outer file is the
/// test's: plain HTTP instead of TLS, upstreams at the test's ports (`baton_api`
/// round-robin over every Baton port given, as deploy/scale/nginx/upstream-baton_api.conf),
/// and `serverDirectives` a test adds to the server block (a setting an operator might add,
/// such as `proxy_request_buffering off;`). Stopped and its files removed on deinit, pass or
/// fail.
package final class NginxProcess: @unchecked Sendable {
    package let directory: String
    package let port: UInt16
    package let process = ChildProcess()

    /// nginx in front of one Baton instance.
    package convenience init(batonPort: UInt16, appPort: UInt16, serverDirectives: String = "") throws {
        try self.init(batonPorts: [batonPort], appPort: appPort, serverDirectives: serverDirectives)
    }

    /// nginx in front of several Baton instances (round-robin).
    /// `reservation`: the port to listen on, reserved by the caller (who had to tell Baton the
    /// gateway's public URL, `--public-url`, before nginx started); a fresh one when nil.
    package init(batonPorts: [UInt16], appPort: UInt16, serverDirectives: String = "", reservation: PortReservation? = nil) throws {
        guard let nginxBinary else { throw ServerProcess.ServerError.didNotStart("nginx is not installed (./scripts/test installs it)") }
        guard let nginxHeadersMoreModule else {
            throw ServerProcess.ServerError.didNotStart("libnginx-mod-http-headers-more-filter is not installed (./scripts/test installs it)")
        }
        directory = NSTemporaryDirectory() + "baton-nginx-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The shipped files include each other relative to nginx's configuration directory
        // (/etc/nginx in Debian; here the directory of this nginx.conf).
        try FileManager.default.createSymbolicLink(atPath: directory + "/snippets", withDestinationPath: repositoryRoot + "/deploy/nginx/snippets")
        // Reserved (bound, not listening, SO_REUSEADDR) until nginx listens on it: nginx binds
        // it too, and no other test can be handed the same port in between.
        let reservation = try reservation ?? PortReservation()
        defer { reservation.release() }
        port = reservation.port
        let config = """
            load_module \(nginxHeadersMoreModule);
            \(geteuid() == 0 ? "user root;" : "")
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log;
            events { worker_connections 512; }
            http {
                access_log off;
                client_body_temp_path \(directory)/body;
                proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi;
                uwsgi_temp_path \(directory)/uwsgi;
                scgi_temp_path \(directory)/scgi;
                include \(repositoryRoot)/deploy/nginx/conf.d/baton-zones.conf;
                upstream baton_api { \(batonPorts.map { "server 127.0.0.1:\($0) max_fails=1 fail_timeout=5s;" }.joined(separator: " ")) keepalive 16; }
                upstream baton_app { server 127.0.0.1:\(appPort); keepalive 4; }
                server {
                    listen 127.0.0.1:\(port);
                    \(serverDirectives)
                    include \(repositoryRoot)/deploy/nginx/snippets/baton-proxy.conf;
                }
            }
            """
        try config.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: nginxBinary)
        process.arguments = ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log", "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        // Ready when this nginx wrote its pid file (after binding its port) and answers.
        let pidFile = directory + "/nginx.pid"
        let ready = eventually(within: 10) {
            FileManager.default.fileExists(atPath: pidFile)
                && (try? HTTPConnection(port: port, timeoutSeconds: 1)).map { $0.close(); return true } ?? false
        }
        guard ready else { throw ServerProcess.ServerError.didNotStart("nginx: " + ((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")) }
    }

    /// What nginx logged at level `error` and above (upstream failures, for one).
    package var errorLog: String { (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "" }

    /// A port that was free a moment ago (nginx cannot report the port it bound).
    package static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    package func request(_ method: String, _ path: String, from source: String? = nil, token: String? = nil, headers: [(String, String)] = [], json: String? = nil) throws -> HTTPConnection.Response {
        let connection = try HTTPConnection(port: port, from: source)
        defer { connection.close() }
        return try connection.request(method, path, token: token, headers: headers, json: json)
    }

    deinit {
        if process.isRunning {
            process.send(SIGQUIT)  // graceful: workers finish, then exit
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The application behind `auth_request`: answers every request with the headers it received
/// that a test cares about (the identity, the token, and what says who and where the client
/// is), and the request target, as JSON. Built on Baton's own HTTP server.
package final class EchoApplication: Sendable {
    package let server: HTTPServer
    package let port: UInt16

    package init() throws {
        var configuration = HTTPServer.Configuration(listen: ListenAddress("127.0.0.1:0")!)
        configuration.eventLoops = 1
        configuration.workerThreads = 2
        server = HTTPServer(configuration: configuration, responder: Responder())
        port = try server.start().port
    }

    deinit { server.shutdown(grace: .seconds(1)) }

    /// The path where the application answers a 401 of its own that looks like Baton's in
    /// every way but the gateway's doing: Baton's body codes, challenge and even Baton's mark
    /// (`X-Baton-Refused`), which a shipped gateway must remove (issue 42, F3).
    package static let ownUnauthorizedPath = "/api/otp/verify"

    package static func echo(_ request: HTTPRequest) -> HTTPResponse {
        if request.target.hasPrefix(ownUnauthorizedPath) {
            return .json(401, #"{"error":"session_expired","error_description":"The one-time code expired."}"#,
                         headers: [("WWW-Authenticate", #"Bearer realm="baton", error="invalid_token""#), ("X-Baton-Refused", "true"),
                                   ("Cache-Control", "no-store")])
        }
        let seen = request.headers.filter { aliasesBatonHeader($0.name) || $0.name.hasPrefix("x-forwarded-") || reported.contains($0.name) }
        let object = Dictionary(seen.map { ($0.name, $0.value) }, uniquingKeysWith: { first, second in first + "," + second })
        let body = (try? JSONSerialization.data(withJSONObject: object.merging(["path": request.target]) { $1 }, options: [.sortedKeys])) ?? Data()
        return .json(200, String(decoding: body, as: UTF8.self))
    }

    /// Whether `name` reads as an `X-Baton-*` header to an application that maps header names
    /// to variables (CGI, WSGI, PHP: every character but a letter or digit becomes `_`), as
    /// `x-baton-user-id` itself, `x_baton_user_id` and `x.baton.user.id` do.
    package static func aliasesBatonHeader(_ name: String) -> Bool {
        String(name.unicodeScalars.map { ("a"..."z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "-" }).hasPrefix("x-baton-")
    }

    /// Headers reported besides `x-baton-*` (and names that alias them) and `x-forwarded-*`: the token and its DPoP proof
    /// (the app must get neither), which request the gateway says was made, and an app's own
    /// header (`x-app-locale`: BatonClient passes the app's headers on).
    static let reported: Set<String> = ["authorization", "dpop", "x-original-method", "x-original-uri", "x-real-ip", "forwarded", "host", "connection",
                                        "x-app-locale"]

    private final class Responder: HTTPResponder {
        func respond(to request: HTTPRequest, from peer: IPAddress) -> HTTPResponse { EchoApplication.echo(request) }
        func respond(to rejection: ServerRejection, from peer: IPAddress) -> HTTPResponse { HTTPResponse(status: 400) }
        func mayBlock(_ request: HTTPRequest) -> Bool { false }
    }
}

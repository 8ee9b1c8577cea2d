import Foundation
import Glibc

/// A loopback HTTP listener that answers each request with what `respond` makes of it (its
/// index from 0 and its head, as sent) and keeps every head it received. One request per
/// connection; the request's body (Content-Length) is read and dropped.
class ScriptedListener: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let respond: @Sendable (Int, String) -> String
    private let lock = NSLock()
    private var heads: [String] = []

    /// Listens on a free loopback port; `respond` gives the raw response for each request.
    init(respond: @escaping @Sendable (_ index: Int, _ head: String) -> String) throws {
        self.respond = respond
        let (fd, port) = try listenOnLoopback()
        self.port = port
        self.fd = fd
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                answer(client)
            }
        }.start()
    }

    /// The request heads received so far (lower-cased), oldest first.
    var requests: [String] { rawRequests.map { $0.lowercased() } }

    /// The request heads received so far as sent, oldest first.
    var rawRequests: [String] {
        lock.lock()
        defer { lock.unlock() }
        return heads
    }

    /// Stops accepting.
    func stop() { shutdown(fd, Int32(SHUT_RDWR)) }

    deinit { close(fd) }

    private func answer(_ client: Int32) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        let end = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? received.count
        let head = String(decoding: received[..<end], as: UTF8.self)
        let length = head.lowercased().split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        var body = received.count - end
        while body < length {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            body += count
        }
        lock.lock()
        let index = heads.count
        heads.append(head)
        lock.unlock()
        let response = Array(respond(index, head).utf8)
        _ = response.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(client)
    }
}

/// A `ScriptedListener` that answers every request `302 Found` to `location`.
final class RedirectListener: ScriptedListener, @unchecked Sendable {
    /// Listens on a free loopback port, redirecting to `location`.
    init(to location: String) throws {
        try super.init { _, _ in "HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" }
    }
}

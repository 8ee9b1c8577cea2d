import Foundation
import Glibc

/// A loopback HTTP listener that answers every request `302 Found` to `location` and keeps the
/// head of each request it received (to see which headers reached it).
final class RedirectListener: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let location: String
    private let lock = NSLock()
    private var heads: [String] = []

    /// Listens on a free loopback port, redirecting to `location`.
    init(to location: String) throws {
        self.location = location
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
    var requests: [String] {
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
        while !received.ends(with: Array("\r\n\r\n".utf8)) {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        lock.lock()
        heads.append(String(decoding: received, as: UTF8.self).lowercased())
        lock.unlock()
        let response = Array("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        _ = response.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(client)
    }
}

extension Array where Element == UInt8 {
    /// Whether the bytes end with `suffix`.
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

import Foundation
import Glibc

/// A TCP relay on a loopback port in front of PostgreSQL that passes its first `passing`
/// connections through and holds every later one: accepted, never answered, until `close()`.
/// To libpq a held connection is a server slow to accept (its connect times out), while the
/// connections already made keep working.
final class HeldConnectRelay: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let upstreamPort: UInt16
    private let lock = NSLock()
    private var passing: Int
    private var sockets: [Int32] = []
    private var held = 0

    enum RelayError: Error { case setup(String) }

    init(to upstreamPort: UInt16, passing: Int) throws {
        self.upstreamPort = upstreamPort
        self.passing = passing
        (listener, port) = try Self.bindLoopback()
        guard listen(listener, 16) == 0 else { throw RelayError.setup("cannot listen on loopback: errno \(errno)") }
        Thread { [self] in acceptLoop() }.start()
    }

    /// A TCP socket bound to a free loopback port (not listening: a connect to it is refused).
    static func bindLoopback() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw RelayError.setup("cannot bind on loopback: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// How many connections are held now.
    var heldConnections: Int { lock.withLock { held } }

    /// Closes the listener and every connection, held or relayed.
    func close() {
        lock.withLock {
            shutdown(listener, Int32(SHUT_RDWR))
            Glibc.close(listener)
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let relayed = lock.withLock { () -> Bool in
                sockets.append(client)
                guard passing > 0 else { held += 1; return false }
                passing -= 1
                return true
            }
            guard relayed else { continue }
            guard let upstream = connectUpstream() else { shutdown(client, Int32(SHUT_RDWR)); continue }
            lock.withLock { sockets.append(upstream) }
            Thread { Self.pump(from: client, to: upstream) }.start()
            Thread { Self.pump(from: upstream, to: client) }.start()
        }
    }

    private func connectUpstream() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = upstreamPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return connected == 0 ? fd : nil
    }

    /// Copies bytes one way until either side closes, then closes the other side's writing.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { return }
                sent += written
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}

import BatonTestSupport
import Foundation
import Glibc

/// A loopback listener that accepts connections and never answers.
final class SilentListener: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let lock = NSLock()
    private var accepted: [Int32] = []

    /// Listens on a free loopback port.
    init() throws {
        let (fd, port) = try listenOnLoopback()
        self.port = port
        self.fd = fd
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                lock.lock()
                accepted.append(client)
                lock.unlock()
            }
        }.start()
    }

    /// Connections accepted so far.
    var acceptedConnections: Int {
        lock.lock()
        defer { lock.unlock() }
        return accepted.count
    }

    /// Stops accepting (the accept thread, which holds the listener, ends; deinit then closes).
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit {
        close(fd)
        for client in accepted { close(client) }
    }
}

/// A listening TCP socket on 127.0.0.1 and the free port the kernel picked for it.
func listenOnLoopback(backlog: Int32 = 16) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")  // port 0: the kernel picks one
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0, listen(fd, backlog) == 0 else {
        close(fd)
        throw TCPRelay.RelayError.setup(errno)
    }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, UInt16(bigEndian: address.sin_port))
}

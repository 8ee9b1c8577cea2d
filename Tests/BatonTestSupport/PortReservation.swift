import Foundation
import Glibc

/// A loopback port held for a server that cannot report the port it bound (nginx): a socket
/// bound to it with SO_REUSEADDR but not listening. The server, which sets SO_REUSEADDR too,
/// can bind and listen on it; the kernel hands it to nobody else until `release()`.
package final class PortReservation: @unchecked Sendable {
    package let port: UInt16
    private var fd: Int32

    /// Reserves a free port on 127.0.0.1.
    package init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            close(fd)
            throw ServerProcess.ServerError.didNotStart("cannot reserve a port: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        self.fd = fd
    }

    /// Gives the port up (the server holds it by now).
    package func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}

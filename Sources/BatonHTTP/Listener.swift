import Glibc

/// Why a listening socket could not be made: the address asked for and the failed call.
package struct ListenError: Error, Equatable, Sendable, CustomStringConvertible {
    package var address: ListenAddress
    package var underlying: SystemError

    /// `cannot listen on 127.0.0.1:8080: Address already in use`, with a hint for the usual causes.
    package var description: String {
        let hint = switch underlying.errno {
        case EADDRINUSE: " (another process holds this port; stop it or choose another address with --listen)"
        case EACCES: " (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
        case EADDRNOTAVAIL: " (no interface of this machine has that address)"
        default: ""
        }
        return "cannot listen on \(address): \(String(cString: strerror(underlying.errno)))\(hint)"
    }
}

/// A bound, listening TCP socket that serves nothing yet: `baton serve` makes it before it
/// touches the database, so a busy port fails before any file is created.
package final class Listener: @unchecked Sendable {
    /// The socket descriptor.
    let fd: Int32
    /// The bound address, with the real port when 0 was asked.
    package let address: ListenAddress

    /// Binds `address` and listens.
    /// - Throws: `ListenError` naming the address.
    package init(address: ListenAddress, backlog: Int32 = 1024) throws(ListenError) {
        let family = address.host.bytes.count == 4 ? AF_INET : AF_INET6
        do throws(SystemError) {
            let fd = try syscall("socket") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            do throws(SystemError) {
                try Self.withSockaddr(address) { pointer, length throws(SystemError) in
                    try syscall("bind") { bind(fd, pointer, length) }
                }
                try syscall("listen") { listen(fd, backlog) }
            } catch {
                Glibc.close(fd)
                throw error
            }
            self.fd = fd
        } catch {
            throw ListenError(address: address, underlying: error)
        }
        var bound = address
        bound.port = Self.localPort(fd)
        self.address = bound
    }

    /// Closes the socket (only when it never reached a server, which closes it at shutdown).
    package func close() { Glibc.close(fd) }

    @discardableResult
    private static func withSockaddr<T>(_ address: ListenAddress, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> T) throws(SystemError) -> T {
        if address.host.bytes.count == 4 {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = address.port.bigEndian
            withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: address.host.bytes) }
            return try withUnsafePointer(to: &v4) { pointer throws(SystemError) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p throws(SystemError) in try body(p, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = address.port.bigEndian
        withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: address.host.bytes) }
        return try withUnsafePointer(to: &v6) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p throws(SystemError) in try body(p, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }

    private static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return withUnsafeBytes(of: &storage) { raw in
            let family = Int32(raw.load(as: sa_family_t.self))
            let offset = family == AF_INET ? MemoryLayout<sockaddr_in>.offset(of: \.sin_port)! : MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!
            return UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        }
    }
}

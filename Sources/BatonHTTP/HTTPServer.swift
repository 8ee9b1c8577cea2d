import Glibc
import Synchronization

/// An HTTP/1.1 server on POSIX sockets: one accept thread and one thread per connection, at
/// most `maxConnections` of them (beyond: 503 and close).
///
/// Why threads and blocking sockets rather than an event loop: an exchange blocks its caller
/// until its group commit is durable, so concurrency *is* the batching; a thread per
/// connection gives every waiting exchange its own stack without callbacks, keeps pipelined
/// requests in order trivially, and a slow client holds only its own thread. Reads wait in
/// `poll` with a deadline, so a slow or idle client is cut off on time. docs/design.md has
/// the measurements.
package final class HTTPServer: @unchecked Sendable {
    /// Limits and timeouts.
    package struct Configuration: Sendable {
        package var listen: ListenAddress
        package var maxConnections = 1024
        /// From a request's first byte to its last (head and body).
        package var requestTimeout: Duration = .seconds(10)
        /// Between requests on a kept-alive connection.
        package var idleTimeout: Duration = .seconds(60)
        /// A blocked write (client not reading) gives up after this.
        package var writeTimeout: Duration = .seconds(10)
        package var limits = RequestParser.Limits()
        package var backlog: Int32 = 1024

        package init(listen: ListenAddress) { self.listen = listen }
    }

    private let configuration: Configuration
    private let responder: any HTTPResponder
    private var listener: Int32 = -1
    private let state = Locked(State())
    /// How often a blocked read wakes to check its deadline and shutdown.
    private static let readSlice: Duration = .milliseconds(200)
    /// Read on every response; written once at shutdown.
    private let isDraining = Atomic<Bool>(false)
    private let drained = ConditionVariable()

    private struct State {
        var draining = false
        /// Open connections.
        var connections: Set<Int32> = []
        var acceptThreadDone = false
    }

    package init(configuration: Configuration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// Binds and starts accepting. Returns the bound address (the real port when 0 was asked).
    package func start() throws(SystemError) -> ListenAddress {
        let address = configuration.listen
        let family = address.host.bytes.count == 4 ? AF_INET : AF_INET6
        let fd = try syscall("socket") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        do {
            try Self.withSockaddr(address) { pointer, length throws(SystemError) in
                try syscall("bind") { bind(fd, pointer, length) }
            }
            try syscall("listen") { listen(fd, configuration.backlog) }
        } catch {
            close(fd)
            throw error
        }
        listener = fd
        var bound = address
        bound.port = Self.localPort(fd)
        spawn { self.acceptLoop() }
        return bound
    }

    /// Stops accepting, lets in-flight requests finish (their responses say `Connection:
    /// close`), closes idle connections (within one read slice), and waits up to `grace` for
    /// all to end. A request whose bytes had already arrived counts as in flight.
    /// - Returns: the connections still open when the grace ran out.
    @discardableResult
    package func shutdown(grace: Duration = .seconds(10)) -> Int {
        state.withLock { $0.draining = true }
        isDraining.store(true, ordering: .releasing)
        Glibc.shutdown(listener, Int32(SHUT_RDWR))  // wakes the blocked accept; idle readers notice within a slice
        let deadline = monotonicNow() + grace
        while true {
            let open = state.withLock { $0.acceptThreadDone ? $0.connections.count : Int.max }
            if open == 0 { break }
            guard monotonicNow() < deadline else { return open == Int.max ? 0 : open }
            drained.wait(timeoutMilliseconds: 50)
        }
        close(listener)
        return 0
    }

    // MARK: - Accepting

    private func acceptLoop() {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // accept4 needs _GNU_SOURCE, which Glibc's module lacks
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    usleep(10_000)  // out of descriptors: back off instead of spinning
                    continue
                }
                break  // the listener was shut down
            }
            let peer = Self.peerAddress(&storage)
            let admitted = state.withLock { state -> Bool in
                guard !state.draining, state.connections.count < configuration.maxConnections else { return false }
                state.connections.insert(fd)
                return true
            }
            if admitted {
                spawn { self.serve(fd, peer: peer) }
            } else {
                rejectAndClose(fd, peer: peer)
            }
        }
        state.withLock { $0.acceptThreadDone = true }
        drained.signal()
    }

    private func rejectAndClose(_ fd: Int32, peer: IPAddress) {
        setTimeout(fd, SO_SNDTIMEO, .milliseconds(100))
        var date = HTTPDate()
        let bytes = responder.respond(to: .overloaded, from: peer).serialized(keepAlive: false, date: date.now())
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
    }

    // MARK: - One connection

    private func serve(_ fd: Int32, peer: IPAddress) {
        defer {
            close(fd)
            state.withLock { _ = $0.connections.remove(fd) }
            drained.signal()
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setTimeout(fd, SO_SNDTIMEO, configuration.writeTimeout)
        setTimeout(fd, SO_RCVTIMEO, Self.readSlice)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(4096)
        var date = HTTPDate()
        var requestDeadline: Duration?
        while true {
            // Answer every complete request already buffered (pipelining), in order.
            let result: RequestParser.ParseResult
            do {
                result = try RequestParser.parse(buffer[...], limits: configuration.limits)
            } catch {
                write(responder.respond(to: .malformed(error), from: peer), to: fd, keepAlive: false, head: false, date: date.now())
                return
            }
            if case .complete(let request, let consumed) = result {
                buffer.removeFirst(consumed)
                requestDeadline = buffer.isEmpty ? nil : monotonicNow() + configuration.requestTimeout
                let response = responder.respond(to: request, from: peer)
                let keepAlive = request.keepsAlive && !isDraining.load(ordering: .acquiring)
                guard write(response, to: fd, keepAlive: keepAlive, head: request.method == "HEAD", date: date.now()), keepAlive else { return }
                continue
            }
            // Need more bytes: wait for them, idle or mid-request. An idle connection also wakes
            // on shutdown; it then closes unless a request's bytes are already waiting.
            let idle = buffer.isEmpty
            let deadline = idle ? monotonicNow() + configuration.idleTimeout : requestDeadline!
            guard let count = read(fd, into: &chunk, until: deadline, wakeOnDrain: idle) else {
                if !idle { write(responder.respond(to: .timeout, from: peer), to: fd, keepAlive: false, head: false, date: date.now()) }
                return
            }
            if count == 0 { return }  // peer closed, or shutting down with nothing pending
            if idle { requestDeadline = monotonicNow() + configuration.requestTimeout }
            buffer += chunk[..<count]
        }
    }

    /// Bytes from `fd`; [] at end of stream, on error, or (with `wakeOnDrain`) at shutdown
    /// when nothing is waiting; nil when the deadline passed.
    ///
    /// A blocking `recv` with a receive timeout of one slice (`SO_RCVTIMEO`, set once per
    /// connection): one system call per read when data is flowing, and between slices the
    /// deadline and shutdown are checked. Bytes that already arrived are always returned
    /// before shutdown is looked at, so a request sent before SIGTERM is still served.
    private func read(_ fd: Int32, into chunk: inout [UInt8], until deadline: Duration, wakeOnDrain: Bool) -> Int? {
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return 0 }
            if wakeOnDrain, isDraining.load(ordering: .acquiring) { return 0 }
            if monotonicNow() >= deadline { return nil }
        }
    }

    /// Writes the whole response; false if the peer went away or stopped reading.
    @discardableResult
    private func write(_ response: HTTPResponse, to fd: Int32, keepAlive: Bool, head: Bool, date: String) -> Bool {
        let bytes = response.serialized(keepAlive: keepAlive, includeBody: !head, date: date)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    // MARK: - Helpers

    private func setTimeout(_ fd: Int32, _ option: Int32, _ duration: Duration) {
        let ms = duration.wholeMillisecondsRoundedUp
        var value = timeval(tv_sec: Int(ms / 1000), tv_usec: Int(ms % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

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

    private static func peerAddress(_ storage: inout sockaddr_storage) -> IPAddress {
        withUnsafeBytes(of: &storage) { raw in
            if Int32(raw.load(as: sa_family_t.self)) == AF_INET {
                let offset = MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
                return IPAddress(bytes: Array(raw[offset..<offset + 4]))
            }
            let offset = MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            let bytes = Array(raw[offset..<offset + 16])
            return IPAddress(bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
                             ? "\(bytes[12]).\(bytes[13]).\(bytes[14]).\(bytes[15])" : IPAddress(bytes: bytes).description) ?? IPAddress(bytes: bytes)
        }
    }
}

/// Starts a detached thread running `body`, with a 512 KiB stack (connection threads are many).
package func spawn(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstacksize(&attributes, 512 * 1024)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let created = pthread_create(&thread, &attributes, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    pthread_attr_destroy(&attributes)
    precondition(created == 0, "pthread_create failed: \(created)")
}

/// Monotonic time since boot.
package func monotonicNow() -> Duration {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
}

extension Duration {
    /// Whole milliseconds, rounded up.
    package var wholeMillisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}

/// A condition variable for "something changed", with a timed wait.
final class ConditionVariable: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func signal() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait(timeoutMilliseconds: Int) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = deadline.tv_nsec + timeoutMilliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        pthread_cond_timedwait(condition, mutex, &deadline)
        pthread_mutex_unlock(mutex)
    }
}

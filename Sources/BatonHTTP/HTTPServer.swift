import BatonSync
import Glibc
import Synchronization

/// An HTTP/1.1 server on POSIX sockets: one accept thread, one epoll event loop per core
/// owning non-blocking connections, and a worker pool for requests that may block.
///
/// Quick requests (verify, health, metrics) are answered on the event loop that read them:
/// no thread switch between reading a request and writing its answer. Requests that may
/// block (a login's argon2id, a logout or a PostgreSQL exchange waiting for its durable
/// commit) run on a worker, so a loop never waits; concurrent writes on many workers are what
/// fills a shared commit. A request the responder answers later (`LoopAnswer.later`: an exchange on
/// SQLite, answered by the group-commit writer after its commit) starts on the loop and
/// needs no thread at all. A connection has at most one request being answered; requests
/// pipelined behind it wait, so responses stay in order. Slow or idle clients cost a few hundred bytes
/// of state and no thread. docs/design.md has the measurements behind this shape.
package final class HTTPServer: @unchecked Sendable {
    /// Limits, timeouts and thread counts.
    package struct Configuration: Sendable {
        package var listen: ListenAddress
        package var maxConnections = 1024
        /// From a request's first byte to its last (head and body).
        package var requestTimeout: Duration = .seconds(10)
        /// Between requests on a kept-alive connection.
        package var idleTimeout: Duration = .seconds(60)
        /// A pending write must make progress within this.
        package var writeTimeout: Duration = .seconds(10)
        package var limits = RequestParser.Limits()
        /// After a closing answer, unread request bytes are discarded for at most this long and
        /// this many bytes (a lingering close: the client reads the answer, not a reset).
        package var lingerTimeout: Duration = .seconds(2)
        package var lingerBytes = 1 << 20
        package var backlog: Int32 = 1024
        /// Event loops; default: one per CPU this process may use (`UsableCPUs`).
        package var eventLoops = UsableCPUs.count()
        /// Workers for requests that may block, at most.
        package var workerThreads = 256

        package init(listen: ListenAddress) { self.listen = listen }
    }

    let configuration: Configuration
    let responder: any HTTPResponder
    let workers: WorkerPool
    let isDraining = Atomic<Bool>(false)
    let acceptorDone = Atomic<Bool>(false)
    private let openConnections = Atomic<Int>(0)
    private let loopsRunning = Atomic<Int>(0)
    private let stopped = ConditionLock()
    private var listener: Int32 = -1
    private var loops: [EventLoop] = []

    package init(configuration: Configuration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
        self.workers = WorkerPool(maxThreads: configuration.workerThreads)
    }

    /// Starts the loops and the acceptor on `listener` (bound here when nil); from then on the
    /// server owns the socket and closes it at shutdown. Returns the bound address (the real
    /// port when 0 was asked).
    /// - Throws: `ListenError` when the address cannot be bound; `SystemError` for the loops.
    package func start(on listener: Listener? = nil) throws -> ListenAddress {
        let bound = try listener ?? Listener(address: configuration.listen, backlog: configuration.backlog)
        do {
            for _ in 0..<configuration.eventLoops { loops.append(try EventLoop(server: self)) }
        } catch {
            if listener == nil { bound.close() }  // a caller's listener stays the caller's to close
            throw error
        }
        self.listener = bound.fd
        loopsRunning.store(loops.count, ordering: .releasing)
        for loop in loops { spawn { loop.run() } }
        spawn { self.acceptLoop() }
        return bound.address
    }

    /// Stops accepting, lets in-flight requests finish (their responses say `Connection:
    /// close`), closes idle connections, and waits up to `grace` for all to end. Bytes that
    /// had already arrived count as a request in flight.
    /// - Returns: the connections still open when the grace ran out.
    @discardableResult
    package func shutdown(grace: Duration = .seconds(10)) -> Int {
        isDraining.store(true, ordering: .releasing)
        Glibc.shutdown(listener, Int32(SHUT_RDWR))  // wakes the blocked accept
        for loop in loops { loop.wake() }
        let deadline = monotonicNow() + grace
        stopped.withLock {
            while loopsRunning.load(ordering: .acquiring) > 0, monotonicNow() < deadline { stopped.wait(milliseconds: 50) }
        }
        workers.stop()
        close(listener)
        return loopsRunning.load(ordering: .acquiring) > 0 ? openConnections.load(ordering: .acquiring) : 0
    }

    func connectionClosed() { openConnections.subtract(1, ordering: .relaxed) }

    func loopFinished() {
        stopped.withLock {
            loopsRunning.subtract(1, ordering: .releasing)
            stopped.broadcast()
        }
    }

    // MARK: - Accepting

    private func acceptLoop() {
        var serial: UInt64 = 0
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
            if isDraining.load(ordering: .acquiring) || openConnections.load(ordering: .relaxed) >= configuration.maxConnections {
                rejectAndClose(fd, peer: peer)
                continue
            }
            openConnections.add(1, ordering: .relaxed)
            serial += 1
            loops[Int(serial % UInt64(loops.count))].adopt(fd, peer: peer, serial: serial)
        }
        acceptorDone.store(true, ordering: .releasing)
        for loop in loops { loop.wake() }
    }

    private func rejectAndClose(_ fd: Int32, peer: IPAddress) {
        let ms = 100
        var value = timeval(tv_sec: 0, tv_usec: ms * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        var date = HTTPDate()
        let bytes = responder.respond(to: .overloaded, from: peer).serialized(keepAlive: false, date: date.now())
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // Drop the request bytes already here, so the close is a FIN after the answer, not a
        // reset that destroys it (the accept thread cannot linger longer than this).
        Glibc.shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        for _ in 0..<4 where recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) > 0 {}
        close(fd)
    }

    // MARK: - Helpers

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

import BatonSync
import CSystem
import Glibc
import Synchronization

/// One epoll loop on its own thread, owning its connections. It reads, parses (the pure
/// `RequestParser`), answers quick requests inline, hands requests that may block to the
/// worker pool, and writes responses in order. Other threads talk to it only through its
/// inbox and a wake-up pipe.
final class EventLoop: @unchecked Sendable {
    private struct Completion {
        var fd: Int32
        var serial: UInt64
        var response: Response
        var keepAlive: Bool
        var head: Bool
    }

    /// A worker's finished response, or what makes one on the loop (`LoopAnswer.later`).
    private enum Response {
        case made(HTTPResponse)
        case toMake(@Sendable () -> HTTPResponse)
    }

    private struct Inbox {
        var adopted: [(fd: Int32, peer: IPAddress, serial: UInt64)] = []
        var completed: [Completion] = []
    }

    private unowned let server: HTTPServer
    private let epoll: Int32
    private let wakePipe: [Int32]
    private let inbox = Locked(Inbox())
    /// Touched only by the loop thread.
    private var connections: [Int32: Connection] = [:]
    /// Answers started here (`LoopAnswer.later`) and not yet made: the loop outlives them,
    /// even when their clients left, since making an answer logs and counts it.
    private var answersAwaited = 0
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    private var lastSweep: Duration = .zero

    init(server: HTTPServer) throws(SystemError) {
        self.server = server
        epoll = try syscall("epoll_create1") { baton_epoll_create() }
        var fds: [Int32] = [-1, -1]
        try syscall("pipe") { pipe(&fds) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakePipe = fds
        try syscall("epoll_ctl") { baton_epoll_control(epoll, 0, fds[0], baton_epollin) }
    }

    deinit {
        close(epoll)
        close(wakePipe[0])
        close(wakePipe[1])
    }

    // MARK: - From other threads

    /// Hands a freshly accepted connection to this loop.
    func adopt(_ fd: Int32, peer: IPAddress, serial: UInt64) {
        inbox.withLock { $0.adopted.append((fd, peer, serial)) }
        wake()
    }

    /// Wakes the loop (shutdown, new work).
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)  // EAGAIN: a wake-up is already pending
    }

    /// Hands a response to the loop. Only the first of a burst wakes it: a pending wake-up
    /// drains the whole inbox, so a batch of exchanges answered together costs one write(2).
    private func complete(_ completion: Completion) {
        let wasEmpty = inbox.withLock { inbox -> Bool in
            let wasEmpty = inbox.completed.isEmpty && inbox.adopted.isEmpty
            inbox.completed.append(completion)
            return wasEmpty
        }
        if wasEmpty { wake() }
    }

    // MARK: - The loop

    func run() {
        var readyFDs = [Int32](repeating: 0, count: 256)
        var readyEvents = [UInt32](repeating: 0, count: 256)
        while true {
            let count = baton_epoll_wait(epoll, &readyFDs, &readyEvents, 256, 100)
            for index in 0..<max(0, Int(count)) {
                let fd = readyFDs[index]
                if fd == wakePipe[0] {
                    while read(wakePipe[0], &scratch, scratch.count) > 0 {}
                    continue
                }
                guard let connection = connections[fd] else { continue }
                let flags = readyEvents[index]
                if connection.isLingering {
                    discardInput(connection)
                    continue
                }
                if connection.isBusy, flags & baton_epollin != 0, flags & (baton_epollhup | baton_epollerr) == 0 {
                    stopReading(connection)
                } else if flags & (baton_epollin | baton_epollhup | baton_epollerr) != 0, !readAvailable(connection) { continue }
                if flags & baton_epollout != 0, !flush(connection) { continue }
                process(connection)
            }
            drainInbox()
            let now = monotonicNow()
            let draining = server.isDraining.load(ordering: .acquiring)
            if draining || now - lastSweep >= .milliseconds(100) {
                sweep(now: now, draining: draining)
                lastSweep = now
            }
            if draining, connections.isEmpty, answersAwaited == 0, server.acceptorDone.load(ordering: .acquiring), inbox.withLock({ $0.adopted.isEmpty }) {
                break
            }
        }
        server.loopFinished()
    }

    private func drainInbox() {
        let pending = inbox.withLock { inbox -> Inbox in
            defer { inbox = Inbox() }
            return inbox
        }
        let now = monotonicNow()
        for (fd, peer, serial) in pending.adopted {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let connection = Connection(fd: fd, peer: peer, serial: serial, idleDeadline: now + server.configuration.idleTimeout)
            connections[fd] = connection
            connection.interest = baton_epollin
            if baton_epoll_control(epoll, 0, fd, baton_epollin) != 0 { closeConnection(connection) }
        }
        for completion in pending.completed {
            // Made whether or not the client is still there: making it logs and counts the answer.
            let response: HTTPResponse
            switch completion.response {
            case .made(let made): response = made
            case .toMake(let make):
                answersAwaited -= 1
                response = make()
            }
            guard let connection = connections[completion.fd], connection.serial == completion.serial else { continue }
            connection.isBusy = false
            let keepAlive = completion.keepAlive && !server.isDraining.load(ordering: .acquiring)
            enqueue(response, on: connection, keepAlive: keepAlive, head: completion.head)
            process(connection)
        }
    }

    /// Parses and answers what is buffered, in order, until a request goes to a worker or is
    /// answered later (`LoopAnswer.later`).
    private func process(_ connection: Connection) {
        let now = monotonicNow()
        parsing: while !connection.isBusy, !connection.closeAfterWrite {
            let result: RequestParser.ParseResult
            do {
                result = try RequestParser.parse(connection.input[...], limits: server.configuration.limits)
            } catch {
                enqueue(server.responder.respond(to: .malformed(error), from: connection.peer), on: connection, keepAlive: false, head: false)
                break
            }
            guard case .complete(let request, let consumed) = result else {
                if connection.input.isEmpty {
                    connection.requestDeadline = nil
                    connection.idleDeadline = now + server.configuration.idleTimeout
                } else if connection.requestDeadline == nil {
                    connection.requestDeadline = now + server.configuration.requestTimeout
                }
                break
            }
            connection.input.removeFirst(consumed)
            connection.requestDeadline = connection.input.isEmpty ? nil : now + server.configuration.requestTimeout
            let head = request.method == "HEAD"
            let (fd, serial) = (connection.fd, connection.serial)
            let work: @Sendable () -> HTTPResponse
            if server.responder.mayBlock(request) {
                let (peer, responder) = (connection.peer, server.responder)
                work = { responder.respond(to: request, from: peer) }
            } else {
                switch server.responder.respondOnLoop(to: request, from: connection.peer) {
                case .response(let response):
                    enqueue(response, on: connection, keepAlive: request.keepsAlive && !server.isDraining.load(ordering: .acquiring), head: head)
                    continue
                case .onWorker(let rest):
                    work = rest
                case .later(let start):
                    connection.isBusy = true
                    answersAwaited += 1
                    start { [self] make in
                        complete(Completion(fd: fd, serial: serial, response: .toMake(make), keepAlive: request.keepsAlive, head: head))
                    }
                    break parsing
                }
            }
            connection.isBusy = true
            server.workers.submit { [self] in
                complete(Completion(fd: fd, serial: serial, response: .made(work()), keepAlive: request.keepsAlive, head: head))
            }
            break
        }
        guard flush(connection) else { return }
        updateInterest(connection)
    }

    private func enqueue(_ response: HTTPResponse, on connection: Connection, keepAlive: Bool, head: Bool) {
        response.serialize(into: &connection.output, keepAlive: keepAlive, includeBody: !head, date: connection.date.nowBytes())
        if !keepAlive { connection.closeAfterWrite = true }
        if connection.writeDeadline == nil { connection.writeDeadline = monotonicNow() + server.configuration.writeTimeout }
    }

    /// Reads what the socket has. Returns false if the connection was closed.
    private func readAvailable(_ connection: Connection) -> Bool {
        while true {
            let count = recv(connection.fd, &scratch, scratch.count, 0)
            if count > 0 {
                if connection.input.isEmpty, connection.requestDeadline == nil {
                    connection.requestDeadline = monotonicNow() + server.configuration.requestTimeout
                }
                connection.input += scratch[..<count]
                if count < scratch.count { return true }
                // Stop buffering past what one request may be; the parser rejects it.
                let limits = server.configuration.limits
                if connection.input.count > limits.maxHeadBytes + limits.maxBodyBytes + 64 * 1024 { return true }
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { return true }
            closeConnection(connection)  // end of stream or error
            return false
        }
    }

    /// Sends pending output. Returns false if the connection was closed.
    private func flush(_ connection: Connection) -> Bool {
        while connection.hasPendingOutput {
            let sent = connection.output.withUnsafeBytes {
                send(connection.fd, $0.baseAddress! + connection.outputOffset, $0.count - connection.outputOffset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent > 0 {
                connection.outputOffset += sent
                connection.writeDeadline = monotonicNow() + server.configuration.writeTimeout
                continue
            }
            if sent < 0, errno == EINTR { continue }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { return true }
            closeConnection(connection)
            return false
        }
        connection.output.removeAll(keepingCapacity: true)
        connection.outputOffset = 0
        connection.writeDeadline = nil
        if connection.closeAfterWrite {
            linger(connection)
            return false
        }
        return true
    }

    /// Closes gracefully after the last answer: shuts down writing (the client reads the
    /// answer, then end of stream) and discards what the client still sends. Closing with
    /// unread bytes in the socket would make the kernel send a reset, which can destroy the
    /// answer before the client (or nginx) reads it: a request refused before its body was
    /// read (413, 400, 431) would then look like a broken connection (nginx: 502).
    private func linger(_ connection: Connection) {
        Glibc.shutdown(connection.fd, Int32(SHUT_WR))
        connection.input.removeAll()
        connection.lingerDeadline = monotonicNow() + server.configuration.lingerTimeout
        connection.lingerBytesLeft = server.configuration.lingerBytes
        setInterest(connection, baton_epollin)
        discardInput(connection)
    }

    /// Reads and drops what a lingering connection has; closes it at end of stream, on an
    /// error, or when its byte budget is spent.
    private func discardInput(_ connection: Connection) {
        while true {
            let count = recv(connection.fd, &scratch, scratch.count, 0)
            if count > 0 {
                connection.lingerBytesLeft -= count
                if connection.lingerBytesLeft > 0 { continue }
            } else if count < 0, errno == EINTR {
                continue
            } else if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return
            }
            closeConnection(connection)
            return
        }
    }

    /// A connection whose request is being answered keeps its read interest (dropping it and
    /// taking it back would cost two `epoll_ctl`s a request): clients rarely send more before
    /// the answer. When one does (a pipelined request, its end of stream), the input stays
    /// in the socket and reading stops until the answer is made (queued to be written);
    /// epoll is level-triggered, so it would otherwise report the same input on every turn.
    private func stopReading(_ connection: Connection) {
        setInterest(connection, connection.interest & ~baton_epollin)
    }

    private func updateInterest(_ connection: Connection) {
        var wanted: UInt32 = 0
        if connection.isBusy {
            wanted |= connection.interest & baton_epollin  // kept until input comes (`stopReading`)
        } else if !connection.closeAfterWrite {
            wanted |= baton_epollin
        }
        if connection.hasPendingOutput { wanted |= baton_epollout }
        setInterest(connection, wanted)
    }

    /// Registers `wanted` for the connection's socket, unless it is what is registered.
    private func setInterest(_ connection: Connection, _ wanted: UInt32) {
        guard wanted != connection.interest else { return }
        baton_epoll_control(epoll, 1, connection.fd, wanted)
        connection.interest = wanted
    }

    /// Timeouts, and closing idle connections at shutdown.
    private func sweep(now: Duration, draining: Bool) {
        for connection in Array(connections.values) {
            if let deadline = connection.lingerDeadline {
                if now >= deadline { closeConnection(connection) }  // bounded: a reset now is the client's doing
            } else if let deadline = connection.writeDeadline, now >= deadline {
                closeConnection(connection)  // the client stopped reading
            } else if !connection.isBusy, !connection.closeAfterWrite, !connection.input.isEmpty,
                      let deadline = connection.requestDeadline, now >= deadline {
                enqueue(server.responder.respond(to: .timeout, from: connection.peer), on: connection, keepAlive: false, head: false)
                if flush(connection) { updateInterest(connection) }
            } else if connection.isIdle, draining || now >= connection.idleDeadline {
                // At shutdown, bytes that already arrived are a request in flight: serve them.
                if draining, readAvailable(connection), !connection.input.isEmpty {
                    process(connection)
                    continue
                }
                if connections[connection.fd] != nil { closeConnection(connection) }
            }
        }
    }

    private func closeConnection(_ connection: Connection) {
        baton_epoll_control(epoll, 2, connection.fd, 0)
        close(connection.fd)
        connections[connection.fd] = nil
        server.connectionClosed()
    }
}

import Foundation
import Glibc

/// A TCP relay on a loopback port in front of the server that loses the answer to the first
/// committed `POST /v1/exchange` (200; or the first `faultyAnswers`): when the server's response arrives, the
/// relay closes the client's connection without forwarding a byte of it (`.drop`), or holds it
/// and forwards nothing until the relay is closed (`.stall`: the client sees no answer and no
/// reset, only its own timeout). The server has committed the exchange; the client never learns
/// the new token. Or it duplicates the first exchange requests (`.duplicateAhead`). Everything
/// else passes through.
final class TCPRelay: @unchecked Sendable {
    /// What happens to a faulty exchange.
    enum Fault: Sendable, Equatable {
        case drop, stall
        /// The answer is held until `release()` (or `close()`), then forwarded whole: an answer
        /// that arrives late, after the client's own deadline (a process that was stopped).
        case hold
        /// The answer is forwarded whole after this many seconds (a slow network: 3G, roaming).
        case delay(TimeInterval)
        /// The answers to the exchange attempts numbered in `lost` (by the client's
        /// `X-Baton-Exchange-Attempt`) are dropped, those in `stalled` held until the relay is
        /// closed, those in `late` forwarded that many seconds late. Keyed by the attempt, not
        /// by the order answers come in: on a loaded machine the client may give an attempt up
        /// before its answer comes (it then never reaches the relay), and the next answer must
        /// not take its fault. The first request of an attempt numbered in `duplicated` reaches
        /// the server first as a copy, as with `.duplicateAhead` (a transport resend after a
        /// connection died: the copy commits, the request itself is answered later).
        /// `lost` and `stalled` fault committed answers (200); `late` also an
        /// `exchange_attempt_superseded` answer (409), which a duplicated attempt gets.
        case byAttempt(lost: Set<Int>, stalled: Set<Int> = [], late: [Int: TimeInterval] = [:], duplicated: Set<Int> = [])
        /// A copy of the exchange request reaches the server first, on a connection of its own
        /// (its answer read, so the server has handled it, and thrown away); then the request
        /// itself, whose DPoP proof the server has now seen (a duplicating network).
        case duplicateAhead
        /// The exchange *request* is held on its way to the server until `release()`, then
        /// forwarded: an attempt the client gave up on that reaches the server after the retry
        /// (a gateway's queue, an overloaded server). `awaitHeldAnswer()` waits for the server's
        /// answer to it (which the client, gone by then, never reads).
        case holdRequest
    }

    let port: UInt16
    private let listener: Int32
    private let upstreamPort: UInt16
    private let fault: Fault
    private let lock = NSLock()
    private var faultsLeft: Int
    private var faulted = 0
    private var faultedNumbers: Set<Int> = []
    private var duplicatedNumbers: Set<Int> = []
    private var isClosed = false
    private var isReleased = false
    private let released = NSCondition()
    private var sockets: [Int32] = []
    private var heldAnswerStatus: String?

    /// Whether an exchange answer was dropped or stalled (or an exchange duplicated).
    var hasDroppedAnExchangeAnswer: Bool { faultedAnswers > 0 }

    /// How many exchange answers were dropped or stalled (or exchanges duplicated).
    var faultedAnswers: Int {
        lock.lock()
        defer { lock.unlock() }
        return faulted
    }

    /// The exchange attempts whose answers were faulted (`.byAttempt`), by number.
    var faultedAttempts: Set<Int> {
        lock.lock()
        defer { lock.unlock() }
        return faultedNumbers
    }

    /// A relay on a free loopback port to the server at `upstreamPort`, losing the first
    /// `faultyAnswers` exchange answers as `fault` says.
    init(to upstreamPort: UInt16, fault: Fault = .drop, faultyAnswers: Int = 1) throws {
        self.upstreamPort = upstreamPort
        self.fault = fault
        faultsLeft = faultyAnswers
        let (listener, port) = try listenOnLoopback(backlog: 64)
        self.port = port
        self.listener = listener
        Thread { [self] in acceptLoop() }.start()
    }

    enum RelayError: Error { case setup(Int32) }

    /// Forwards the answers held by `.hold`.
    func release() {
        released.lock()
        isReleased = true
        released.broadcast()
        released.unlock()
    }

    /// Stops accepting and ends every relayed connection. Only shuts the sockets down: they are
    /// closed in deinit, which runs after the relay's threads (which hold the relay) have ended,
    /// so no descriptor is closed twice or used after its number went to someone else.
    func close() {
        lock.lock()
        let open = sockets
        lock.unlock()
        released.lock()
        isClosed = true
        released.broadcast()
        released.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        Glibc.close(listener)
        for fd in sockets { Glibc.close(fd) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            guard let upstream = connectUpstream() else {
                Glibc.close(client)
                continue
            }
            lock.lock()
            sockets += [client, upstream]
            lock.unlock()
            let connection = RelayedConnection()
            Thread { [self] in pump(from: client, to: upstream, connection, towardServer: true) }.start()
            Thread { [self] in pump(from: upstream, to: client, connection, towardServer: false) }.start()
        }
    }

    /// Copies bytes one way until either side closes. Toward the server it notes whether the
    /// request in flight is an exchange, and its attempt number; toward the client it faults
    /// the exchange answers `fault` names.
    private func pump(from source: Int32, to destination: Int32, _ connection: RelayedConnection, towardServer: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            if towardServer {
                // Requests on one connection are sequential (no pipelining from URLSession).
                let head = String(decoding: buffer[..<count], as: UTF8.self)
                connection.exchangeInFlight = head.hasPrefix("POST /v1/exchange")
                connection.attempt = Self.attemptNumber(in: head)
                if fault == .holdRequest && connection.exchangeInFlight && claimAFault() {
                    connection.isHeld = true
                    awaitRelease()
                }
                // The exchange request has no body: its head is the whole request, in one read.
                if fault == .duplicateAhead && connection.exchangeInFlight && claimAFault() { sendCopyAhead(Array(buffer[..<count])) }
                if connection.exchangeInFlight, let number = connection.attempt, claimADuplicate(ofAttempt: number) {
                    sendCopyAhead(Array(buffer[..<count]))
                }
            } else if connection.isHeld {
                connection.isHeld = false
                noteHeldAnswer(String(decoding: buffer[..<min(count, 12)], as: UTF8.self))
            } else if connection.exchangeInFlight, let status = Self.faultableStatus(buffer[..<count]),
                      let withheld = answerFault(attempt: connection.attempt, status: status) {
                // Only a committed exchange's answer (200), or a superseded one's (409), is
                // faulted: a `use_dpop_nonce` challenge before it is no exchange yet.
                switch withheld {
                case .hold: awaitRelease()
                case .delay(let seconds): Thread.sleep(forTimeInterval: seconds)  // the fault itself: a late answer
                case .stall: awaitClose()
                case .drop: break
                }
                if withheld.closes { break }  // the client gets a closed connection, or nothing at all
            }
            var offset = 0
            while offset < count {
                let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { break }
                offset += sent
            }
            // A held request, forwarded late: its client has likely gone, and its end of the
            // connection must not end the server's before the server has answered.
            if towardServer && connection.isHeld { _ = awaitHeldAnswer() }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }

    /// Sends `request` to the server on a new connection and waits for the first bytes of its
    /// answer (the server answers once it has handled the request), then closes it.
    private func sendCopyAhead(_ request: [UInt8]) {
        guard let copy = connectUpstream() else { return }
        defer { Glibc.close(copy) }
        var offset = 0
        while offset < request.count {
            let sent = request.withUnsafeBytes { send(copy, $0.baseAddress! + offset, request.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
        var answer = [UInt8](repeating: 0, count: 4096)
        _ = answer.withUnsafeMutableBytes { recv(copy, $0.baseAddress, $0.count, 0) }
    }

    /// A new connection to the server, or nil when it cannot be made.
    private func connectUpstream() -> Int32? {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = upstreamPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            Glibc.close(upstream)
            return nil
        }
        return upstream
    }

    /// What an answer to a committed exchange suffers.
    private enum AnswerFault: Equatable {
        case drop, stall, hold, delay(TimeInterval)
        /// Whether the client's connection ends without the answer.
        var closes: Bool { self == .drop || self == .stall }
    }

    /// The status of an answer that may be faulted: 200 (committed) or 409 (superseded).
    private static func faultableStatus(_ bytes: ArraySlice<UInt8>) -> Int? {
        if bytes.starts(with: Array("HTTP/1.1 200".utf8)) { return 200 }
        if bytes.starts(with: Array("HTTP/1.1 409".utf8)) { return 409 }
        return nil
    }

    /// The fault an exchange's answer with `status` gets, now claimed and counted (nil: it
    /// passes). Only `.byAttempt`'s `late` faults a 409.
    private func answerFault(attempt: Int?, status: Int) -> AnswerFault? {
        let committed = status == 200
        switch fault {
        case .drop: return committed && claimAFault() ? .drop : nil
        case .stall: return committed && claimAFault() ? .stall : nil
        case .hold: return committed && claimAFault() ? .hold : nil
        case .delay(let seconds): return committed && claimAFault() ? .delay(seconds) : nil
        case .duplicateAhead, .holdRequest: return nil  // faults of the request, not the answer
        case .byAttempt(let lost, let stalled, let late, _):
            guard let number = attempt else { return nil }
            let withheld: AnswerFault? = committed && lost.contains(number) ? .drop
                : committed && stalled.contains(number) ? .stall : late[number].map { .delay($0) }
            if withheld != nil { noteFault(ofAttempt: number) }
            return withheld
        }
    }

    /// Whether the request of attempt `number` is to be duplicated ahead (its first request
    /// only), now claimed.
    private func claimADuplicate(ofAttempt number: Int) -> Bool {
        guard case .byAttempt(_, _, _, let duplicated) = fault, duplicated.contains(number) else { return false }
        lock.lock()
        defer { lock.unlock() }
        return duplicatedNumbers.insert(number).inserted
    }

    private func noteFault(ofAttempt number: Int) {
        lock.lock()
        faulted += 1
        faultedNumbers.insert(number)
        lock.unlock()
    }

    /// The value of a request head's `X-Baton-Exchange-Attempt`, if it has one.
    private static func attemptNumber(in head: String) -> Int? {
        let name = "x-baton-exchange-attempt:"
        // "\r\n" is one Character in Swift.
        guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix(name) }) else { return nil }
        return Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces))
    }

    private func claimAFault() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard faultsLeft > 0 else { return false }
        faultsLeft -= 1
        faulted += 1
        return true
    }

    /// The status line's start of the server's answer to the held request ("HTTP/1.1 409"),
    /// once it came; waits up to `seconds` for it.
    func awaitHeldAnswer(within seconds: Double = 30) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        released.lock()
        defer { released.unlock() }
        while heldAnswerStatus == nil && !isClosed {
            guard released.wait(until: deadline) else { break }
        }
        return heldAnswerStatus
    }

    private func noteHeldAnswer(_ status: String) {
        released.lock()
        heldAnswerStatus = status
        released.broadcast()
        released.unlock()
    }

    /// Holds a stalled answer until `close()`.
    private func awaitClose() {
        released.lock()
        while !isClosed { released.wait() }
        released.unlock()
    }

    /// Holds an answer until `release()` or `close()`.
    private func awaitRelease() {
        released.lock()
        while !isReleased && !isClosed { released.wait() }
        released.unlock()
    }

    /// What the two directions of one connection share.
    private final class RelayedConnection: @unchecked Sendable {
        private let lock = NSLock()
        private var exchange = false
        private var held = false
        private var number: Int?
        var exchangeInFlight: Bool {
            get { lock.lock(); defer { lock.unlock() }; return exchange }
            set { lock.lock(); exchange = newValue; lock.unlock() }
        }
        /// The exchange attempt's number of the request in flight, if it carries one.
        var attempt: Int? {
            get { lock.lock(); defer { lock.unlock() }; return number }
            set { lock.lock(); number = newValue; lock.unlock() }
        }
        /// Whether this connection's request was held (`.holdRequest`) and its answer not seen yet.
        var isHeld: Bool {
            get { lock.lock(); defer { lock.unlock() }; return held }
            set { lock.lock(); held = newValue; lock.unlock() }
        }
    }
}

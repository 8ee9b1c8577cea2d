import Foundation
import Glibc
import Testing

/// A request refused before its body is read (413, 400, 431) is answered and then closed
/// gracefully (a lingering close): the client reads the answer and then end of stream, never
/// a connection reset, and nginx in front passes the answer on instead of a 502.
@Suite(.serialized)
struct EarlyAnswerTests {
    /// How a connection ended after the answer.
    enum Ending: Equatable { case endOfStream, reset, timeout }

    /// Sends the head and the first KiB of `request`, waits (up to 5 s) for the answer to
    /// arrive, then sends the rest, the way a client streaming a body does; returns the
    /// status line's code and how the stream ended. Closing with unread bytes made the kernel
    /// reset the connection, and the client lost the end of the stream or the answer itself.
    static func send(_ request: [UInt8], to port: UInt16) throws -> (status: Int?, ending: Ending) {
        let connection = try HTTPConnection(port: port)
        defer { connection.close() }
        let split = min(request.count, (request.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? 0) + 1024)
        sendAll(request[..<split], on: connection.fd)
        var readable = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&readable, 1, 5000)
        sendAll(request[split...], on: connection.fd)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
                continue
            }
            let ending: Ending = count == 0 ? .endOfStream : (errno == EAGAIN ? .timeout : .reset)
            let text = String(decoding: received.prefix(64), as: UTF8.self)
            let status = text.hasPrefix("HTTP/1.1 ") ? Int(text.dropFirst(9).prefix(3)) : nil
            return (status, ending)
        }
    }

    /// The peer may reset while we still write: that is the failure looked for, not an error here.
    static func sendAll(_ bytes: ArraySlice<UInt8>, on fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Sends `request` `times` times; counts "status ending" (e.g. "413 endOfStream").
    static func endings(of request: [UInt8], to port: UInt16, times: Int = 100) throws -> [String: Int] {
        var endings: [String: Int] = [:]
        for _ in 0..<times {
            let (status, ending) = try send(request, to: port)
            endings["\(status.map(String.init) ?? "none") \(ending)", default: 0] += 1
        }
        return endings
    }

    /// A POST with a `body`-byte body (not JSON: it is refused before it is read).
    static func post(_ path: String, body: Int, extraHeaders: String = "") -> [UInt8] {
        Array("POST \(path) HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\(extraHeaders)Content-Length: \(body)\r\n\r\n".utf8)
            + [UInt8](repeating: UInt8(ascii: "a"), count: body)
    }

    @Test func a20000ByteBodyGets413AndEndOfStreamEveryTime() throws {
        let server = try ServerProcess()
        #expect(try Self.endings(of: Self.post("/v1/login", body: 20_000), to: server.port, times: 200) == ["413 endOfStream": 200])
    }

    @Test func aMalformedHeadWithABodyGets400AndEndOfStream() throws {
        let server = try ServerProcess()
        // A space before the colon is a 400 (RFC 9112 §5.1), found before the body is read.
        #expect(try Self.endings(of: Self.post("/v1/login", body: 12_000, extraHeaders: "Bad : x\r\n"), to: server.port) == ["400 endOfStream": 100])
    }

    @Test func oversizeHeadersWithABodyGet431AndEndOfStream() throws {
        let server = try ServerProcess()
        let padding = (1...3).map { "X-Pad-\($0): " + String(repeating: "p", count: 7000) + "\r\n" }.joined()
        #expect(try Self.endings(of: Self.post("/v1/login", body: 12_000, extraHeaders: padding), to: server.port) == ["431 endOfStream": 100])
    }

    @Test func aClientThatNeverStopsSendingIsCutOffWithinTheLingerBound() throws {
        let server = try ServerProcess()
        let connection = try HTTPConnection(port: server.port)
        defer { connection.close() }
        try connection.send(Self.post("/v1/login", body: 20_000))
        #expect(try connection.readResponse().status == 413)
        // Keep sending: the server discards up to 1 MiB or 2 s, then closes.
        let started = Date()
        let junk = [UInt8](repeating: 0x61, count: 64 * 1024)
        var failed = false
        while Date().timeIntervalSince(started) < 15 {
            let sent = junk.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { failed = true; break }
        }
        #expect(failed, "the server kept a lingering connection open for 15 s")
    }

    /// Through nginx (the shipped rules): headers nginx accepts but Baton refuses (431, its
    /// head limit is 16 KiB) with a body behind them. A reset made nginx answer 502 (shown
    /// as 503 `unavailable` by the shipped error page) instead of Baton's answer.
    @Test func nginxPassesEarlyAnswersOnWithoutA502() throws {
        let baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32"])
        let app = try EchoApplication()
        let nginx = try NginxProcess(batonPort: baton.port, appPort: app.port)
        let padding = (1...4).map { ("X-Pad-\($0)", String(repeating: "p", count: 7900)) }
        let body = "{\"username\":\"" + String(repeating: "a", count: 15_000) + "\"}"
        var statuses: [Int: Int] = [:]
        for attempt in 0..<200 {
            let response = try nginx.request("POST", "/v1/password", from: "127.0.2.\(attempt % 200 + 1)", headers: padding, json: body)
            statuses[response.status, default: 0] += 1
        }
        #expect(statuses == [431: 200])
    }
}

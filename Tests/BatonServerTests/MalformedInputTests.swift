import Foundation
import Testing

/// The HTTP layer's bad-input list: each case gets its own test, answered with its status,
/// a JSON error body, `Connection: close`, and the connection closed.
@Suite(.serialized)
struct MalformedInputTests {
    let server: ServerProcess

    init() throws { server = try ServerProcess() }

    func expectRejected(_ raw: String, status: Int, error: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = try server.connect()
        defer { connection.close() }
        try connection.send(raw)
        let response = try connection.readResponse()
        #expect(response.status == status, sourceLocation: sourceLocation)
        #expect(response.error == error, sourceLocation: sourceLocation)
        #expect((response.json["error_description"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(response.headers["connection"] == "close", sourceLocation: sourceLocation)
        #expect(connection.isClosedByServer(), sourceLocation: sourceLocation)
        // The server is still fine.
        #expect(try server.request("GET", "/healthz").status == 200, sourceLocation: sourceLocation)
    }

    @Test func contentLengthWithTransferEncoding() throws {
        try expectRejected("POST /v1/exchange HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func transferEncodingAlone() throws {
        try expectRejected("POST /v1/login HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func duplicateContentLength() throws {
        try expectRejected("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", status: 400, error: "bad_request")
    }

    @Test func malformedContentLength() throws {
        try expectRejected("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Length: 2x\r\n\r\n{}", status: 400, error: "bad_request")
    }

    @Test func obsoleteLineFolding() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  2\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func bareCarriageReturnInAValue() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func nulInAValue() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: 1\u{0}2\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func controlCharacterInAValue() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: 1\u{1b}2\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func invalidHeaderName() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX(A): 1\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func missingHostOnHTTP11() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\n\r\n", status: 400, error: "bad_request")
    }

    @Test func headersOver16KiB() throws {
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: \(String(repeating: "b", count: 17 * 1024))\r\n\r\n", status: 431, error: "headers_too_large")
    }

    @Test func bodyOver16KiB() throws {
        let body = String(repeating: "x", count: 20 * 1024)
        try expectRejected("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)", status: 413, error: "payload_too_large")
    }

    @Test func garbageBytes() throws {
        try expectRejected("\u{16}\u{3}\u{1}\u{0}\u{a5}\u{1}\u{0}", status: 400, error: "bad_request")
    }

    @Test func unsupportedHTTPVersion() throws {
        try expectRejected("GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n", status: 505, error: "bad_request")
    }

    @Test func floodOfGarbageNeverWedgesTheServer() throws {
        race(threads: 16) { index in
            for round in 0..<20 {
                guard let connection = try? self.server.connect() else { continue }
                var bytes = (0..<512).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ index &* 7 &+ round) ^ 0x5A) }
                if round % 2 == 0 { bytes = Array("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Length: 1".utf8) + bytes }
                try? connection.send(bytes)
                connection.close()
            }
        }
        #expect(try server.request("GET", "/healthz").status == 200)
    }
}

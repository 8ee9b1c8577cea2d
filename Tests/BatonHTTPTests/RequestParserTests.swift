@testable import BatonHTTP
import Testing

struct RequestParserTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Valid requests and what they parse to.
    static let valid: [(String, HTTPRequest)] = [
        ("GET /v1/verify HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n\r\n",
         HTTPRequest(method: "GET", target: "/v1/verify", headers: [("host", "a"), ("authorization", "Bearer x")])),
        ("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
         HTTPRequest(method: "POST", target: "/v1/login", headers: [("host", "a"), ("content-type", "application/json"), ("content-length", "2")], body: Array("{}".utf8))),
        ("GET /healthz HTTP/1.0\r\n\r\n", HTTPRequest(method: "GET", target: "/healthz", minorVersion: 0)),
        ("GET /x?y=1 HTTP/1.1\r\nHost:a\r\nX-Empty:\r\nX-Pad: \t v \t\r\n\r\n",
         HTTPRequest(method: "GET", target: "/x?y=1", headers: [("host", "a"), ("x-empty", ""), ("x-pad", "v")])),
        ("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", HTTPRequest(method: "GET", target: "/", headers: [("host", "a")])),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-Obs: caf\u{e9}\r\n\r\n", HTTPRequest(method: "GET", target: "/", headers: [("host", "a"), ("x-obs", "caf\u{e9}")])),
    ]

    @Test func validRequestsParse() throws {
        for (text, expected) in Self.valid {
            let input = Self.bytes(text)
            let result = try RequestParser.parse(input[...])
            #expect(result == .complete(expected, consumed: input.count), "\(text.debugDescription)")
        }
    }

    @Test func everySplitPointNeedsMoreDataThenCompletes() throws {
        for (text, expected) in Self.valid {
            let input = Self.bytes(text)
            for split in 0..<input.count {
                let prefix = try RequestParser.parse(input[..<split])
                #expect(prefix == .needMoreData, "split \(split) of \(text.debugDescription)")
            }
            #expect(try RequestParser.parse(input[...]) == .complete(expected, consumed: input.count))
        }
    }

    @Test func pipelinedRequestsAreConsumedOneAtATime() throws {
        let first = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
        let input = Self.bytes(first + "GET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        guard case .complete(let one, let consumed) = try RequestParser.parse(input[...]) else { Issue.record("incomplete"); return }
        #expect(one.target == "/a" && one.body == Self.bytes("abc") && consumed == first.utf8.count)
        guard case .complete(let two, _) = try RequestParser.parse(input[consumed...]) else { Issue.record("incomplete"); return }
        #expect(two.target == "/b")
    }

    /// Each bad input, the error it must produce (smuggling defences first).
    static let invalid: [(String, HTTPParseError)] = [
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc", .contentLengthWithTransferEncoding),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .transferEncodingNotSupported),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", .duplicateContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", .invalidContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", .invalidContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999\r\n\r\n", .invalidContentLength),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n folded\r\n\r\n", .obsoleteLineFolding),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n", .invalidHeaderValue),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{0}b\r\n\r\n", .invalidHeaderValue),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{1}b\r\n\r\n", .invalidHeaderValue),
        ("GET / HTTP/1.1\r\nHost: a\r\nX A: b\r\n\r\n", .invalidHeaderName),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n", .invalidHeaderName),
        ("GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n", .invalidHeaderName),
        ("GET / HTTP/1.1\r\n\r\n", .missingHost),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .duplicateHost),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion),
        ("GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("GET http://evil/ HTTP/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("G\u{0}T / HTTP/1.1\r\nHost: a\r\n\r\n", .malformedRequestLine),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 16385\r\n\r\n", .bodyTooLarge),
    ]

    @Test func invalidRequestsAreRejectedWithTheirError() {
        for (text, expected) in Self.invalid {
            #expect(throws: expected, "\(text.debugDescription)") { try RequestParser.parse(Self.bytes(text)[...]) }
        }
    }

    @Test func garbageIsRejectedBeforeTheHeadIsComplete() {
        #expect(throws: HTTPParseError.malformedRequestLine) { try RequestParser.parse(Self.bytes("\u{16}\u{3}\u{1}")[...]) }  // a TLS hello
        #expect(throws: HTTPParseError.malformedRequestLine) { try RequestParser.parse(Self.bytes("GET / HTTP/1.1\nHost")[...]) }  // bare LF ends the request line
        #expect(throws: HTTPParseError.obsoleteLineFolding) { try RequestParser.parse(Self.bytes("GET / HTTP/1.1\r\nHost: a\r\n x")[...]) }
    }

    @Test func oversizeHeadIsRejected() {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "a", count: 16 * 1024) + "\r\n\r\n"
        #expect(throws: HTTPParseError.headersTooLarge) { try RequestParser.parse(Self.bytes(head)[...]) }
        #expect(throws: HTTPParseError.headersTooLarge) { try RequestParser.parse(Self.bytes(String(head.prefix(16 * 1024 + 10)))[...]) }
        let many = "GET / HTTP/1.1\r\nHost: a\r\n" + (0..<101).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(throws: HTTPParseError.tooManyHeaders) { try RequestParser.parse(Self.bytes(many)[...]) }
    }

    @Test func everyByteInAHeaderNameIsEitherATokenCharOrRejected() throws {
        for byte in UInt8(0)...255 where byte != 13 && byte != 10 && byte != 58 {
            var input = Self.bytes("GET / HTTP/1.1\r\nHost: a\r\nX")
            input.append(byte)
            input += Self.bytes(": v\r\n\r\n")
            if RequestParser.isTokenChar(byte) {
                #expect(throws: Never.self) { try RequestParser.parse(input[...]) }
            } else {
                #expect(throws: HTTPParseError.self, "byte \(byte)") { try RequestParser.parse(input[...]) }
            }
        }
    }

    @Test func everyByteInAHeaderValueIsEitherFieldContentOrRejected() throws {
        for byte in UInt8(0)...255 where byte != 13 && byte != 10 {
            var input = Self.bytes("GET / HTTP/1.1\r\nHost: a\r\nX-V: a")
            input.append(byte)
            input += Self.bytes("b\r\n\r\n")
            let allowed = byte == 9 || (byte >= 32 && byte != 127)
            if allowed {
                #expect(throws: Never.self, "byte \(byte)") { try RequestParser.parse(input[...]) }
            } else {
                #expect(throws: HTTPParseError.invalidHeaderValue, "byte \(byte)") { try RequestParser.parse(input[...]) }
            }
        }
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() {
        #expect(HTTPRequest(method: "GET", target: "/", minorVersion: 1).keepsAlive)
        #expect(!HTTPRequest(method: "GET", target: "/", minorVersion: 1, headers: [("connection", "Close")]).keepsAlive)
        #expect(!HTTPRequest(method: "GET", target: "/", minorVersion: 0).keepsAlive)
        #expect(HTTPRequest(method: "GET", target: "/", minorVersion: 0, headers: [("connection", "keep-alive")]).keepsAlive)
    }

    @Test func cidrMatchingAndAddressParsing() {
        #expect(CIDR("10.0.0.0/8")!.contains(IPAddress("10.200.3.4")!))
        #expect(!CIDR("10.0.0.0/8")!.contains(IPAddress("11.0.0.1")!))
        #expect(CIDR("::1/128")!.contains(IPAddress("::1")!))
        #expect(CIDR("2001:db8::/32")!.contains(IPAddress("2001:db8:1::5")!))
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        #expect(CIDR("10.0.0.0/33") == nil && IPAddress("999.1.1.1") == nil)
        #expect(ListenAddress("[::1]:8080")?.description == "[::1]:8080")
        #expect(ListenAddress("::1:8080") == nil)
    }
}

@testable import BatonHTTP
import Glibc
import Testing

/// The byte writers on every response's path give exactly what the general formatters did.
struct ByteFormattingTests {
    @Test func decimalsAreStringsDigits() {
        var values = Array(0...1_100) + [9_999, 10_000, 65_535, 1_000_000, Int(Int32.max), Int.max]
        values += (1...18).map { Int(pow(10, Double($0))) - 1 }
        for value in values {
            var bytes: [UInt8] = [35]
            HTTPResponse.appendDecimal(value, to: &bytes)
            #expect(bytes == [35] + Array(String(value).utf8))
        }
    }

    @Test func ipv4AddressesPrintAsInetNtopDoes() {
        for a in [0, 1, 9, 10, 99, 100, 127, 199, 200, 255] {
            for b in [0, 7, 10, 255] {
                let bytes: [UInt8] = [UInt8(a), UInt8(b), UInt8(255 - b), UInt8(a / 2)]
                var address = in_addr()
                withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
                var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
                let expected = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                #expect(IPAddress(bytes: bytes).description == expected)
                #expect(IPAddress(expected) == IPAddress(bytes: bytes))
            }
        }
    }

    @Test func literalsAndShortAndLongStringsAppendTheirUTF8() {
        var bytes: [UInt8] = []
        bytes.append("Date: ")
        bytes.append(utf8: "caf\u{E9}")
        bytes.append(utf8: String(repeating: "x", count: 40))
        #expect(bytes == Array(("Date: caf\u{E9}" + String(repeating: "x", count: 40)).utf8))
    }

    @Test func aResponseSerializedIntoABufferAppendsTheSameBytes() {
        let response = HTTPResponse(status: 401, headers: [("Content-Type", "application/json"), ("X-Baton-Error", "{}")], body: Array("{}".utf8))
        var bytes: [UInt8] = [1, 2]
        response.serialize(into: &bytes, keepAlive: false, includeBody: true, date: Array("Sun, 22 Nov 2026 13:00:00 GMT".utf8))
        let expected = "HTTP/1.1 401 Unauthorized\r\nDate: Sun, 22 Nov 2026 13:00:00 GMT\r\nContent-Type: application/json\r\n"
            + "X-Baton-Error: {}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        #expect(bytes == [1, 2] + Array(expected.utf8))
        #expect(response.serialized(keepAlive: false, date: "Sun, 22 Nov 2026 13:00:00 GMT") == Array(expected.utf8))
    }
}

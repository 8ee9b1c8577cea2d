@testable import BatonAPI
import BatonCore
import Foundation
import Glibc
import Testing

/// The 503 `unavailable` line: what failed, escaped, at most one a second with the count of
/// those left out (read back from a real pipe through the same buffered writer as the logs).
struct UnavailableLogTests {
    @Test func oneLineASecondNamingTheReasonAndCountingTheRest() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let output = AccessLog(fd: fds[1])
        let log = UnavailableLog(output: output)
        let start = Instant(milliseconds: 1_800_000_000_000)
        let reason = "PostgreSQL at postgresql://baton@127.0.0.1:5432/baton: connection to server at \"127.0.0.1\" failed: timeout expired\n"
        log.record(path: "/v1/verify", reason: reason, at: start)
        log.record(path: "/v1/verify", reason: reason, at: start + .milliseconds(300))
        log.record(path: "/v1/exchange", reason: "database is locked", at: start + .milliseconds(900))
        log.record(path: "/v1/exchange", reason: "database is locked", at: start + .milliseconds(1000))
        output.close()
        close(fds[1])
        let text = String(decoding: try FileHandle(fileDescriptor: fds[0]).readToEnd() ?? Data(), as: UTF8.self)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2, "\(text)")
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["event"] as? String } == ["unavailable", "unavailable"])
        #expect(objects[0]["path"] as? String == "/v1/verify" && objects[0]["reason"] as? String == reason)
        #expect(objects[0]["not_logged"] as? Int == 0)
        #expect(objects[1]["path"] as? String == "/v1/exchange" && objects[1]["not_logged"] as? Int == 2)
        #expect(objects[1]["time"] as? String == (start + .milliseconds(1000)).rfc3339)
    }
}

import Foundation
import Glibc
import Synchronization
import Testing

/// The server's memory does not grow with logins: argon2id's working memory (19 MiB per
/// hash) goes back to the system after each hash, whatever thread ran it.
struct MemoryTests {
    /// A field of /proc/PID/status in KiB (VmRSS: resident now).
    static func statusKiB(_ pid: Int32, _ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    @Test func residentMemoryStaysBoundedAfterABurstOfLogins() throws {
        // Two hashes at once and four clients: the hashes run on many worker threads, which
        // is what made glibc keep a 19 MiB block per thread arena before.
        let server = try ServerProcess(["--max-chains-per-user", "0", "--max-concurrent-hashes", "2", "--access-log", "off"])
        try server.addUser("alice")
        let failures = Mutex(0)
        let clients = 4, loginsEach = 12
        DispatchQueue.concurrentPerform(iterations: clients) { client in
            for index in 0..<loginsEach {
                if (try? server.login(device: "device-\(client)-\(index)")) == nil { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let pid = server.process.processIdentifier
        let bound = 64 * 1024
        let afterLogins = try Self.statusKiB(pid, "VmRSS")
        #expect(afterLogins < bound, "VmRSS after \(clients * loginsEach) logins: \(afterLogins) KiB")

        // Exchanges and verifies on those chains do not change the picture.
        let token = try server.login(device: "load")["token"] as! String
        var head = token
        for _ in 0..<200 {
            let response = try server.request("POST", "/v1/exchange", token: head)
            try #require(response.status == 200)
            head = response.json["token"] as! String
            #expect(try server.request("GET", "/v1/verify", token: head).status == 200)
        }
        let afterLoad = try Self.statusKiB(pid, "VmRSS")
        #expect(afterLoad < bound, "VmRSS after load: \(afterLoad) KiB")
        // The peak (VmHWM) is not bounded here: while hashes run, each holds its 19 MiB, so it
        // is the base plus 19 MiB per --max-concurrent-hashes (docs/design.md, "Memory").
    }
}

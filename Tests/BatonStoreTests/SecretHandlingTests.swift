@testable import BatonCore
@testable import BatonStore
import Foundation
import Testing

struct SecretHandlingTests {
    /// Reads every file SQLite keeps for the database.
    static func databaseBytes(_ path: String) -> [UInt8] {
        ["", "-wal", "-shm"].flatMap { suffix in
            (FileManager.default.contents(atPath: path + suffix)).map { [UInt8]($0) } ?? []
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count, let first = needle.first else { return false }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, Array(haystack[index..<index + needle.count]) == needle { return true }
            index += 1
        }
        return false
    }

    @Test func databaseFilesContainNoIssuedTokenBytes() throws {
        let db = try TemporaryDatabase()
        var issued: [String] = []
        for device in ["a", "b", "c"] {
            var bundle = try db.login(device: device)
            issued.append(bundle.token)
            for _ in 0..<5 {
                bundle = try db.store.exchange(bundle.token, context: RequestContext(deviceID: device))
                issued.append(bundle.token)
            }
            let retry = try db.store.exchange(issued[issued.count - 2], context: RequestContext(deviceID: device))  // R3a
            issued.append(retry.token)
        }
        _ = try? db.store.exchange(issued[0])  // reuse
        // While open (the WAL holds recent pages) and after a clean close (checkpointed).
        for phase in ["open", "closed"] {
            if phase == "closed" { db.store.close() }
            let bytes = Self.databaseBytes(db.path)
            #expect(bytes.count > 4096)
            for token in issued {
                #expect(!Self.contains(bytes, Array(token.utf8)), "\(phase): token text found")
                let body = try #require(Base64URL.decode(Array(token.utf8.dropFirst(4))))
                #expect(!Self.contains(bytes, Array(body[12..<44])), "\(phase): token secret found")
            }
        }
    }
}

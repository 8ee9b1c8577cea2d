@testable import BatonCore
import BatonStorage
import Foundation
import Testing

/// No issued token, nor its secret, is stored anywhere in the database, on both stores: on
/// SQLite every file it keeps (the database, its WAL and shared memory), on PostgreSQL every
/// row of every table as text (bytea as hex). The tokens' hashes, which are stored, show
/// that the search would find bytes that were there.
struct SecretHandlingTests {
    /// What the database holds: the SQLite files' bytes, or a text dump of every PostgreSQL row.
    static func databaseBytes(_ db: BackendDatabase) throws -> [UInt8] {
        switch db.backend {
        case .sqlite:
            return ["", "-wal", "-shm"].flatMap { suffix in
                (FileManager.default.contents(atPath: db.location + suffix)).map { [UInt8]($0) } ?? []
            }
        case .postgresql:
            let tables = try db.rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename").compactMap { $0[0] }
            return try tables.flatMap { table in try db.rows("SELECT t::text FROM \(table) t").compactMap { $0[0] } }.flatMap { Array($0.utf8) + [10] }
        }
    }

    /// Bytes as the database shows them: themselves in SQLite's files, lowercase hex in a
    /// PostgreSQL dump.
    static func stored(_ bytes: [UInt8], _ backend: Backend) -> [UInt8] {
        switch backend {
        case .sqlite: bytes
        case .postgresql: Array(bytes.map { String(format: "%02x", $0) }.joined().utf8)
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

    @Test(arguments: Backend.allCases)
    func databaseContainsNoIssuedTokenBytes(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
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
        // While open (SQLite's WAL holds recent pages) and after a clean close (checkpointed).
        for phase in ["open", "closed"] {
            if phase == "closed" { db.store.close() }
            let bytes = try Self.databaseBytes(db)
            for token in issued {
                #expect(Self.contains(bytes, Self.stored(TokenHash(of: token).bytes, backend)), "\(phase): token hash not found")
                #expect(!Self.contains(bytes, Array(token.utf8)), "\(phase): token text found")
                let body = try #require(Base64URL.decode(Array(token.utf8.dropFirst(4))))
                #expect(!Self.contains(bytes, Self.stored(Array(body[12..<44]), backend)), "\(phase): token secret found")
            }
        }
    }
}

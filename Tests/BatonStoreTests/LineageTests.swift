@testable import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// `TokenStore.lineage(of:)`: who received each token, and both sides of a reuse or fork.
struct LineageTests {
    @Test func forkShowsTheRetryAndBothHoldersOfTheGeneration() throws {
        let db = try TemporaryDatabase()
        try db.store.createUser("alice", password: "correct horse battery")
        let first = try db.login()
        db.clock.advance(by: .milliseconds(250))
        let phone = RequestContext(ip: "192.0.2.10", userAgent: "App/1", deviceID: "phone-1")
        let lost = try db.store.exchange(first.token, context: phone)
        db.clock.advance(by: .milliseconds(250))
        _ = try db.store.exchange(first.token, context: RequestContext(ip: "192.0.2.11", userAgent: "App/1", deviceID: "phone-1"))  // R3a
        db.clock.advance(by: .milliseconds(250))
        #expect(batonError { _ = try db.store.exchange(lost.token, context: RequestContext(ip: "198.51.100.7", userAgent: "curl")) } == .chainRevoked(.forkDetected))

        let lineage = try db.store.lineage(of: first.chainID)
        #expect(lineage.username == "alice" && lineage.deviceID == "phone-1" && lineage.revocation == .forkDetected)
        #expect(lineage.tokens.map(\.generation) == [0, 1, 1])
        #expect(lineage.tokens.map(\.end) == [.exchanged, .replaced, nil])
        #expect(lineage.tokens[0].issuedTo?.ip == "192.0.2.10")  // the login (db.login's address)
        #expect(lineage.tokens[1].issuedTo?.ip == "192.0.2.10")  // the exchange whose response was lost
        #expect(lineage.tokens[2].issuedTo?.ip == "192.0.2.11")  // the retry
        let fork = try #require(lineage.incidents.first)
        #expect(lineage.incidents.count == 1 && fork.kind == .forkDetected && fork.generation == 1)
        #expect(fork.original?.ip == "192.0.2.10" && fork.attempt.ip == "198.51.100.7" && fork.attempt.userAgent == "curl")
    }

    @Test func unknownChainIsNotFound() throws {
        let db = try TemporaryDatabase()
        #expect(batonError { _ = try db.store.lineage(of: ChainID(rawValue: 42)) } == .chainNotFound(ChainID(rawValue: 42)))
    }

    @Test func sqliteErrorsAreExplainedWithThePath() {
        let cases: [(Int32, String)] = [
            (26, "database x.db is not a SQLite database (another file, or damaged) (SQLITE_NOTADB)"),
            (8 | (1 << 8), "database x.db is read-only: the server and the commands that write need write access to the file, its -wal and -shm files and their directory (SQLITE_READONLY)"),
            (5, "database x.db is locked by another process for longer than the busy timeout; retry, or look for a stuck sqlite3 shell or backup (SQLITE_BUSY)"),
            (13, "database x.db cannot grow: the disk (or the quota) is full (SQLITE_FULL)"),
            (3, "database x.db cannot be accessed: permission denied (SQLITE_PERM)"),
        ]
        for (code, text) in cases { #expect(SQLiteError(code: code, message: "raw").explanation(path: "x.db") == text) }
    }
}

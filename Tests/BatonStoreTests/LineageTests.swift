@testable import BatonCore
import BatonStorage
import Testing

/// `lineage(of:)` on both stores: who received each token, and both sides of a reuse or fork.
struct LineageTests {
    @Test(arguments: Backend.allCases)
    func forkShowsTheRetryAndBothHoldersOfTheGeneration(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try db.store.createUser("alice", password: "correct horse battery")
        let first = try db.login()
        db.clock.advance(by: .milliseconds(250))
        let phone = RequestContext(ip: "192.0.2.10", userAgent: "App/1", deviceID: "phone-1")
        let lost = try db.store.exchange(first.token, context: phone)
        db.clock.advance(by: .milliseconds(250))
        _ = try db.store.exchange(first.token, context: RequestContext(ip: "192.0.2.11", userAgent: "App/1", deviceID: "phone-1"))  // R3a
        db.clock.advance(by: .milliseconds(250))
        #expect(batonError { _ = try db.store.exchange(lost.token, context: RequestContext(ip: "198.51.100.7", userAgent: "curl")) } == .chainRevoked(.forkDetected))

        let lineage = try db.admin.lineage(of: first.chainID)
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

    @Test(arguments: Backend.allCases)
    func unknownChainIsNotFound(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        #expect(batonError { _ = try db.admin.lineage(of: ChainID(rawValue: 42)) } == .chainNotFound(ChainID(rawValue: 42)))
    }
}

@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Single flight against the real server: however many requests need an exchange, one
/// exchange reaches the server. Racing tests repeat several rounds inside the test.
@Suite struct SingleFlightTests {
    /// `frozenClock`: false, the client sees the expiry itself and exchanges before sending;
    /// true, it learns it from 50 simultaneous 401 `token_expired` answers.
    @Test(arguments: [false, true])
    func fiftyConcurrentSendsWithAnExpiredTokenMakeOneExchange(frozenClock: Bool) async throws {
        let server = try startServer(["--token-ttl", "4s"])
        for round in 1...3 {
            let session = makeSession(server.baseURL, frozenClock: frozenClock, maxConcurrentRequests: 16)
            try await session.loginAlice()
            let token = try #require(await session.token)
            try await server.awaitExpiry(of: token)
            let before = try server.exchangeCount(), rejectionsBefore = try server.verifyRejections()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 { group.addTask { try await session.get("/v1/verify") } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 50), "round \(round)")
            #expect(try server.exchangeCount() - before == 1, "round \(round)")
            if frozenClock { #expect(try server.verifyRejections() > rejectionsBefore, "the 401 token_expired path was taken") }
            #expect(await session.status == .loggedIn(chainID: try #require(await session.chainID), generation: 1))
        }
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }

    @Test func cancelledWaitersDoNotCancelTheSharedExchange() async throws {
        let server = try startServer(["--token-ttl", "2s"])
        let session = makeSession(server.baseURL)
        try await session.loginAlice()
        try await server.awaitExpiry(of: try #require(await session.token))
        let before = try server.exchangeCount()
        let waiters = (0..<10).map { _ in Task { try await session.get("/v1/verify") } }
        for waiter in waiters.prefix(5) { waiter.cancel() }
        for waiter in waiters.suffix(5) { #expect(try await waiter.value == 200) }
        for waiter in waiters.prefix(5) { _ = await waiter.result }  // succeeded or cancelled: either is fine
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount() - before == 1)
    }

    @Test func streamAcrossTenLifetimesExchangesOncePerLifetime() async throws {
        let server = try startServer(["--token-ttl", "1s"])
        let session = makeSession(server.baseURL)
        try await session.loginAlice()
        let started = Date()
        // Four workers send back to back until the chain has reached generation 10.
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var sent = 0
                    while await session.generation < 10 {
                        let status = try await session.get("/v1/verify")
                        #expect(status == 200)
                        sent += 1
                    }
                    return sent
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(try server.exchangeCount() == 10)
        #expect(counts.allSatisfy { $0 > 0 })
        // One exchange per lifetime: ten exchanges cannot happen faster than nine lifetimes.
        #expect(elapsed >= 9, "\(elapsed) s")
        let kinds = try server.auditKinds()
        #expect(kinds.filter { $0 == "exchanged" }.count == 10)
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("exchange_retried"))
    }
}

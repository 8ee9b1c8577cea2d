@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Single flight against the real server: however many requests need an exchange, one
/// exchange reaches the server. Racing tests repeat several rounds inside the test.
@Suite struct SingleFlightTests {
    /// 50 requests at once, the client seeing its token expired: one exchange before sending.
    @Test func fiftyConcurrentSendsWithAnExpiredTokenMakeOneExchange() async throws {
        let server = try startServer()
        for round in 1...5 {
            let clock = TestClock()
            let session = makeSession(server.baseURL, clock: clock, maxConcurrentRequests: 16)
            try await session.loginAlice()
            clock.advance(by: pastTheLifetime)
            let before = try server.exchangeCount()
            let statuses = try await sendConcurrently(50, "/v1/verify", through: session)
            #expect(statuses == Array(repeating: 200, count: 50), "round \(round)")
            #expect(try server.exchangeCount() - before == 1, "round \(round)")
            #expect(await session.generation == 1, "round \(round)")
        }
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }

    /// 50 requests at once with a token the server considers expired and the client does not:
    /// 50 answers 401 `token_expired`, one exchange, 50 replays. The server's tokens live 10 s
    /// here (a real expiry is awaited; the successor must outlive the 50 replays on a busy machine).
    @Test func fiftyConcurrentTokenExpiredAnswersMakeOneExchange() async throws {
        let server = try startServer(["--token-ttl", "10s"])
        for round in 1...2 {
            let session = makeSession(server.baseURL, clock: TestClock(frozen: true), maxConcurrentRequests: 16)
            try await session.loginAlice()
            try await server.awaitExpiry(of: try #require(await session.token))
            let before = try server.exchangeCount(), rejectionsBefore = try server.verifyRejections()
            let statuses = try await sendConcurrently(50, "/v1/verify", through: session)
            #expect(statuses == Array(repeating: 200, count: 50), "round \(round)")
            #expect(try server.exchangeCount() - before == 1, "round \(round)")
            #expect(try server.verifyRejections() - rejectionsBefore >= 1, "the 401 token_expired path was taken")
            #expect(await session.generation == 1, "round \(round)")
        }
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }

    @Test func cancelledWaitersDoNotCancelTheSharedExchange() async throws {
        let server = try startServer()
        for round in 1...3 {
            let clock = TestClock()
            let session = makeSession(server.baseURL, clock: clock)
            try await session.loginAlice()
            clock.advance(by: pastTheLifetime)
            let before = try server.exchangeCount()
            let waiters = (0..<10).map { _ in Task { try await session.get("/v1/verify") } }
            for waiter in waiters.prefix(5) { waiter.cancel() }
            for waiter in waiters.suffix(5) { #expect(try await waiter.value == 200, "round \(round)") }
            for waiter in waiters.prefix(5) { _ = await waiter.result }  // succeeded or cancelled: either is fine
            #expect(try await session.get("/v1/verify") == 200)
            #expect(try server.exchangeCount() - before == 1, "round \(round)")
        }
    }

    /// Requests streaming back to back across ten real token lifetimes: one exchange per
    /// lifetime, whether the client saw the expiry first or the server's 401 did. Tokens live
    /// 5 s: on a loaded machine an exchange's commit (fsync) alone took over 2 s, and a token
    /// that expires on its way to the client is a slow disk, not a client error.
    @Test func streamAcrossTenLifetimesExchangesOncePerLifetime() async throws {
        let server = try startServer(["--token-ttl", "5s"])
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
        #expect(counts.allSatisfy { $0 > 0 })
        // A request still in flight when generation 10 arrived may have seen it expire too.
        let generation = await session.generation
        #expect((10...11).contains(generation))
        let kinds = try server.auditKinds()
        #expect(kinds.filter { $0 == "exchanged" }.count == generation)
        // One exchange per lifetime: n exchanges cannot happen faster than n - 1 lifetimes.
        #expect(elapsed >= Double(generation - 1) * 5, "\(elapsed) s for \(generation) exchanges")
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("exchange_retried"))
    }
}

/// Sends `count` GETs of `path` at once through `session`; their statuses.
func sendConcurrently(_ count: Int, _ path: String, through session: BatonSession) async throws -> [Int] {
    try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<count { group.addTask { try await session.get(path) } }
        return try await group.reduce(into: [Int]()) { $0.append($1) }
    }
}

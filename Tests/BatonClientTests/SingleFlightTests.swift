@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Single flight against the real server: however many requests need an exchange, one
/// exchange reaches the server. Racing tests repeat several rounds inside the test.
@Suite(.ownThreads) struct SingleFlightTests {
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
    /// 50 answers 401 `token_expired`, one exchange, 50 replays.
    @Test func fiftyConcurrentTokenExpiredAnswersMakeOneExchange() async throws {
        for round in 1...3 {
            let store = MemoryCredentialStore(), clock = TestClock(frozen: true)
            let (server, first) = try await serverAfterAShortLivedLogin(into: store, clock: clock)
            let session = makeSession(server.baseURL, store: store, clock: clock, maxConcurrentRequests: 16)
            let statuses = try await sendConcurrently(50, "/v1/verify", through: session)
            #expect(statuses == Array(repeating: 200, count: 50), "round \(round)")
            #expect(try server.exchangeCount() == 1, "round \(round)")
            #expect(try server.verifyRejections() >= 2, "round \(round): the 401 token_expired path was taken")
            #expect(await session.generation == 1, "round \(round)")
            #expect(try !server.auditKinds().contains("reuse_detected"))
            withExtendedLifetime(first) {}
        }
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

    /// Requests streaming back to back across ten token lifetimes (the client's clock moves past
    /// each lifetime in turn): one exchange per lifetime, never one more, no reuse.
    /// `exchange_retried` would mean a second flight for the same token; so that it means only
    /// that, each attempt waits 15 s (with the 2 s default, one slow fsync on a loaded machine
    /// made the single flight retry after its timeout, which is the client's designed recovery).
    @Test func streamAcrossTenLifetimesExchangesOncePerLifetime() async throws {
        let server = try startServer()
        let clock = TestClock()
        let session = makeSession(server.baseURL, clock: clock, exchangeTimeout: .seconds(15))
        try await session.loginAlice()
        let streaming = Flag()
        streaming.set()
        let workers = (0..<4).map { _ in
            Task { () throws -> Int in
                var sent = 0
                while streaming.isSet {
                    let status = try await session.get("/v1/verify")
                    #expect(status == 200)
                    sent += 1
                }
                return sent
            }
        }
        for lifetime in 1...10 {
            clock.advance(by: pastTheLifetime)
            guard await eventuallyAsync(within: 60, { await session.generation == lifetime }) else {
                Issue.record("lifetime \(lifetime): generation \(await session.generation)")
                break
            }
        }
        streaming.clear()
        for worker in workers { #expect(try await worker.value > 0) }
        #expect(await session.generation == 10)
        let kinds = try server.auditKinds()
        #expect(kinds.filter { $0 == "exchanged" }.count == 10)
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

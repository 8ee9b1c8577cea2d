@testable import BatonCore
@testable import BatonStore
import Testing

/// R3b end to end on both stores: the head records the number of the attempt that made it, and
/// a late attempt numbered no higher is answered without touching the head, so the successor
/// the client holds stays the chain's one live token.
struct AttemptOrderTests {
    static func attempt(_ number: Int?) -> RequestContext {
        var context = RequestContext(ip: "192.0.2.10", deviceID: "phone-1")
        context.exchangeAttempt = number
        return context
    }

    @Test(arguments: Backend.allCases) func anAbandonedAttemptArrivingAfterItsRetryLeavesTheRetrysSuccessorLive(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        // Attempt 1 is held on its way; attempt 2 is committed and answered first.
        let held = try db.store.exchange(first.token, context: Self.attempt(2))
        db.clock.advance(by: .seconds(2))
        // Then attempt 1 arrives: before R3b it replaced `held` (R3a) and the client's next
        // request presented a replaced sibling: fork_detected, a logout nobody caused.
        #expect(batonError { _ = try db.store.exchange(first.token, context: Self.attempt(1)) } == .exchangeAttemptSuperseded(headAttempt: 2))
        #expect(try db.store.verify(held.token).chainID == first.chainID)
        #expect(try db.store.exchange(held.token, context: Self.attempt(1)).generation == 2)
        #expect(try db.auditEvents(kind: .exchangeRetried).isEmpty)
        #expect(try db.auditEvents(kind: .forkDetected).isEmpty && db.auditEvents(kind: .chainRevoked).isEmpty)
    }

    @Test(arguments: Backend.allCases) func aHigherAttemptIsTheLostResponseRetryAndRecordsItsNumber(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        _ = try db.store.exchange(first.token, context: Self.attempt(1))  // answer lost
        db.clock.advance(by: .seconds(1))
        let retried = try db.store.exchange(first.token, context: Self.attempt(2))
        #expect(try db.auditEvents(kind: .exchangeRetried).count == 1)
        // A copy of attempt 2 (a duplicating network) now changes nothing.
        #expect(batonError { _ = try db.store.exchange(first.token, context: Self.attempt(2)) } == .exchangeAttemptSuperseded(headAttempt: 2))
        #expect(try db.store.verify(retried.token).chainID == first.chainID)
    }

    @Test(arguments: Backend.allCases) func unnumberedClientsKeepR3a(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        _ = try db.store.exchange(first.token, context: Self.attempt(2))
        db.clock.advance(by: .seconds(1))
        let retried = try db.store.exchange(first.token, context: Self.attempt(nil))
        #expect(try db.store.verify(retried.token).chainID == first.chainID)
        #expect(try db.auditEvents(kind: .exchangeRetried).count == 1)
    }

    @Test(arguments: Backend.allCases) func aLateLowerAttemptAfterTheGraceIsStillReuse(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let head = try db.store.exchange(first.token, context: Self.attempt(2))
        db.clock.advance(by: .seconds(11))
        #expect(batonError { _ = try db.store.exchange(first.token, context: Self.attempt(1)) } == .tokenReused)
        #expect(batonError { _ = try db.store.verify(head.token) } == .chainRevoked(.reuseDetected))
    }
}

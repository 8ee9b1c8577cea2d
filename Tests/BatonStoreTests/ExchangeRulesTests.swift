@testable import BatonCore
@testable import BatonStore
import Testing

/// R1-R6 end to end on both stores (a real SQLite file, a real PostgreSQL database), with an
/// injected clock.
struct ExchangeRulesTests {
    @Test(arguments: Backend.allCases) func loginCreatesChainWithGenerationZeroHead(_ backend: Backend) async throws {  // R1
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        #expect(bundle.generation == 0)
        #expect(bundle.expiresIn == 900)
        #expect(bundle.expiresAt == db.clock.now() + .seconds(900))
        let verified = try db.store.verify(bundle.token)
        #expect(verified.username == "alice" && verified.chainID == bundle.chainID && verified.deviceID == "phone-1")
        let events = try db.auditEvents(kind: .loginSucceeded)
        #expect(events.count == 1 && events[0].chainID == bundle.chainID.rawValue && events[0].generation == 0 && events[0].ip == "192.0.2.10")
    }

    @Test(arguments: Backend.allCases) func exchangingHeadIssuesNextGenerationAndConsumesIt(_ backend: Backend) async throws {  // R2
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let second = try db.store.exchange(first.token)
        #expect(second.generation == 1 && second.chainID == first.chainID)
        #expect(batonError { _ = try db.store.verify(first.token) } == .tokenSuperseded)
        #expect(try db.store.verify(second.token).chainID == first.chainID)
        // An expired head is still exchangeable inside the window.
        db.clock.advance(by: .seconds(3600))
        #expect(batonError { _ = try db.store.verify(second.token) } == .tokenExpired)
        let third = try db.store.exchange(second.token)
        #expect(third.generation == 2)
        #expect(try db.store.verify(third.token).chainID == first.chainID)
        #expect(try db.auditEvents(kind: .exchanged).map(\.generation) == [1, 2])
    }

    @Test(arguments: Backend.allCases) func exchangeWindowClosesAfterExpiryPlusWindow(_ backend: Backend) async throws {  // R2
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        #expect(bundle.exchangeUntil == bundle.expiresAt + .seconds(7 * 86_400))
        db.clock.advance(by: .seconds(900 + 7 * 86_400))
        #expect(batonError { _ = try db.store.exchange(bundle.token) } == .exchangeWindowClosed)
    }

    @Test(arguments: Backend.allCases) func reusingConsumedTokenRevokesChainAndAuditsBothSides(_ backend: Backend) async throws {  // R3
        var policy = Policy()
        policy.retryGrace = .zero
        let db = try await BackendDatabase(backend, policy: policy)
        let first = try db.login()
        let second = try db.store.exchange(first.token, context: RequestContext(ip: "192.0.2.10", userAgent: "App/1", deviceID: "phone-1"))
        db.clock.advance(by: .seconds(30))
        #expect(batonError { _ = try db.store.exchange(first.token, context: RequestContext(ip: "203.0.113.66", userAgent: "curl/8", deviceID: "evil")) } == .tokenReused)
        #expect(batonError { _ = try db.store.verify(second.token) } == .chainRevoked(.reuseDetected))
        #expect(batonError { _ = try db.store.exchange(second.token) } == .chainRevoked(.reuseDetected))
        let reuse = try #require(try db.auditEvents(kind: .reuseDetected).first)
        #expect(reuse.detail.contains(#""original":{"at":"2027-01-15T08:00:00.000Z","device_id":"phone-1","device_id_from":"x-device-id","ip":"192.0.2.10","user_agent":"App/1"}"#))
        #expect(reuse.detail.contains(#""attempt":{"at":"2027-01-15T08:00:30.000Z","device_id":"evil","ip":"203.0.113.66","user_agent":"curl/8"}"#))
        #expect(try db.auditEvents(kind: .chainRevoked).map(\.detail) == [#"{"reason":"reuse_detected"}"#])
    }

    @Test(arguments: Backend.allCases) func lostResponseRetryReplacesTheUnusedHead(_ backend: Backend) async throws {  // R3a
        let db = try await BackendDatabase(backend)
        let phone = RequestContext(ip: "192.0.2.10", deviceID: "phone-1")
        let first = try db.login()
        let lost = try db.store.exchange(first.token, context: phone)
        db.clock.advance(by: .seconds(3))
        let retried = try db.store.exchange(first.token, context: phone)
        #expect(retried.generation == lost.generation)  // the replacement takes the replaced head's generation
        #expect(retried.token != lost.token)
        #expect(try db.store.verify(retried.token).chainID == first.chainID)
        #expect(try db.auditEvents(kind: .exchangeRetried).count == 1)
        #expect(try db.auditEvents(kind: .chainRevoked).isEmpty)
    }

    @Test(arguments: Backend.allCases) func retryIsReuseOnceTheHeadWasPresentedOrFromAnotherDeviceOrLate(_ backend: Backend) async throws {  // R3a limits
        for scenario in ["presented", "device", "late", "noDevice"] {
            let db = try await BackendDatabase(backend)
            let first = try db.login()
            let head = try db.store.exchange(first.token, context: RequestContext(deviceID: "phone-1"))
            var context = RequestContext(deviceID: "phone-1")
            switch scenario {
            case "presented":
                _ = try db.store.verify(head.token)
                // Reopening drains SQLite's queued "presented" mark (PostgreSQL writes it at once).
                try db.reopen()
            case "device": context.deviceID = "phone-2"
            case "late": db.clock.advance(by: .seconds(10))
            default: context.deviceID = nil
            }
            #expect(batonError { _ = try db.store.exchange(first.token, context: context) } == .tokenReused, "\(scenario)")
        }
    }

    @Test(arguments: Backend.allCases) func presentingAReplacedSiblingRevokesTheChain(_ backend: Backend) async throws {  // R4
        let db = try await BackendDatabase(backend)
        let phone = RequestContext(deviceID: "phone-1")
        let first = try db.login()
        let lost = try db.store.exchange(first.token, context: phone)
        let retried = try db.store.exchange(first.token, context: phone)
        #expect(batonError { _ = try db.store.verify(lost.token) } == .chainRevoked(.forkDetected))
        #expect(batonError { _ = try db.store.verify(retried.token) } == .chainRevoked(.forkDetected))
        #expect(batonError { _ = try db.store.exchange(lost.token) } == .chainRevoked(.forkDetected))
        #expect(try db.auditEvents(kind: .forkDetected).count == 1)
        #expect(try db.auditEvents(kind: .chainRevoked).map(\.detail) == [#"{"reason":"fork_detected"}"#])
    }

    @Test(arguments: Backend.allCases) func everyTokenOfARevokedChainGivesChainRevokedWithReason(_ backend: Backend) async throws {  // R4
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let second = try db.store.exchange(first.token)
        try db.store.logout(second.token)
        for token in [first.token, second.token] {
            #expect(batonError { _ = try db.store.verify(token) } == .chainRevoked(.logout))
            #expect(batonError { _ = try db.store.exchange(token) } == .chainRevoked(.logout))
            #expect(batonError { try db.store.logout(token) } == .chainRevoked(.logout))
        }
    }

    @Test(arguments: Backend.allCases) func verifyAnswersWithoutRevoking(_ backend: Backend) async throws {  // R5
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let second = try db.store.exchange(first.token)
        for _ in 0..<3 { #expect(batonError { _ = try db.store.verify(first.token) } == .tokenSuperseded) }
        #expect(try db.store.verify(second.token).chainID == first.chainID)  // nothing was revoked
        #expect(batonError { _ = try db.store.verify("bt1_" + String(repeating: "A", count: 80)) } == .tokenInvalid)
        #expect(batonError { _ = try db.store.verify("not a token") } == .tokenInvalid)
        db.clock.advance(by: .seconds(901))
        #expect(batonError { _ = try db.store.verify(second.token) } == .tokenExpired)
        #expect(batonError { _ = try db.store.verify(first.token) } == .tokenSuperseded)  // superseded > expired
        db.clock.advance(by: .seconds(30 * 86_400))
        #expect(batonError { _ = try db.store.verify(second.token) } == .sessionExpired)
        #expect(batonError { _ = try db.store.exchange(second.token) } == .sessionExpired)
        #expect(batonError { _ = try db.store.exchange(first.token) } == .sessionExpired)  // session_expired > token_reused
    }

    @Test(arguments: Backend.allCases) func tokenOfAnotherDatabaseKeyIsInvalidWithoutTouchingTheChain(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let other = try await BackendDatabase(backend)
        let foreign = try other.login()
        #expect(batonError { _ = try db.store.exchange(foreign.token) } == .tokenInvalid)
    }

    @Test(arguments: Backend.allCases) func logoutRevokesTheChainOfTheHeadEvenExpired(_ backend: Backend) async throws {  // R6
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let second = try db.store.exchange(first.token)
        db.clock.advance(by: .seconds(3600))
        try db.store.logout(second.token)
        #expect(batonError { _ = try db.store.exchange(second.token) } == .chainRevoked(.logout))
        // A consumed token revokes too (someone else moved the chain on).
        let other = try db.login()
        let moved = try db.store.exchange(other.token)
        try db.store.logout(other.token)
        #expect(batonError { _ = try db.store.verify(moved.token) } == .chainRevoked(.logout))
        #expect(try db.auditEvents(kind: .chainRevoked).map(\.detail) == [#"{"reason":"logout"}"#, #"{"reason":"logout"}"#])
    }
}

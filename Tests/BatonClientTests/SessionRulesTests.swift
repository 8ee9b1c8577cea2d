@testable import BatonClient
import Foundation
import Testing

/// The session's decisions without a network: every token rule of issue 8, one test each.
struct SessionRulesTests {
    let rules = SessionRules(expiryMargin: 30)
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var fresh: TokenBundle { TokenBundle(token: "bt1_fresh", expiresAt: now.addingTimeInterval(600), chainID: "c", generation: 1) }
    var expired: TokenBundle { TokenBundle(token: "bt1_old", expiresAt: now.addingTimeInterval(-1), chainID: "c", generation: 0) }
    var newer: TokenBundle { TokenBundle(token: "bt1_new", expiresAt: now.addingTimeInterval(900), chainID: "c", generation: 1) }

    /// Runs one decision; returns it and the bundles `startExchange` was called with.
    func decide(_ state: SessionState<Int>, _ input: SessionInput) -> (SessionRules.Transition<Int>, [TokenBundle]) {
        var started: [TokenBundle] = []
        let transition = rules.decide(state, input) { bundle in
            started.append(bundle)
            return 7
        }
        return (transition, started)
    }

    @Test func freshTokenIsSentAsIs() {
        let (transition, started) = decide(.active(fresh), .tokenNeeded(now: now))
        #expect(transition.state == .active(fresh) && transition.actions == [.send(fresh)] && started.isEmpty)
    }

    @Test func expiredTokenIsExchangedBeforeSending() {
        let (transition, started) = decide(.active(expired), .tokenNeeded(now: now))
        #expect(transition.state == .exchanging(expired, 7) && transition.actions == [.wait(7)] && started == [expired])
    }

    @Test func tokenWithinTheMarginCountsAsExpired() {
        let closeToExpiry = TokenBundle(token: "bt1_close", expiresAt: now.addingTimeInterval(29))
        let (transition, _) = decide(.active(closeToExpiry), .tokenNeeded(now: now))
        #expect(transition.state == .exchanging(closeToExpiry, 7))
    }

    @Test func theMarginIsAtMostAQuarterOfTheTokensLifetime() {
        let shortLived = TokenBundle(token: "bt1_short", expiresAt: now.addingTimeInterval(3), lifetime: 10)  // margin 2.5 s, not 30
        #expect(decide(.active(shortLived), .tokenNeeded(now: now)).0.actions == [.send(shortLived)])
        #expect(decide(.active(shortLived), .tokenNeeded(now: now.addingTimeInterval(0.5))).0.state == .exchanging(shortLived, 7))
    }

    @Test func everyoneWaitsForTheOneExchangeInFlight() {
        for input in [SessionInput.tokenNeeded(now: now), .rejected(token: expired.token, .expired),
                      .rejected(token: expired.token, .superseded), .exchangeAwaited, .exchangeRequested] {
            let (transition, started) = decide(.exchanging(expired, 3), input)
            #expect(transition.state == .exchanging(expired, 3) && transition.actions == [.wait(3)] && started.isEmpty, "\(input)")
        }
    }

    @Test func tokenExpiredAnswerForTheHeldTokenStartsOneExchange() {
        let (transition, started) = decide(.active(fresh), .rejected(token: fresh.token, .expired))
        #expect(transition.state == .exchanging(fresh, 7) && transition.actions == [.wait(7)] && started == [fresh])
    }

    @Test func supersededAnswerReplaysWithTheNewerHeldTokenWithoutExchanging() {
        let (transition, started) = decide(.active(newer), .rejected(token: expired.token, .superseded))
        #expect(transition.state == .active(newer) && transition.actions == [.send(newer)] && started.isEmpty)
    }

    @Test func supersededAnswerForTheHeldTokenAsksTheStoreAndTheServer() {
        // Another process exchanged it (the exchange adopts its successor from the store), or
        // our own answer was lost (the server's R3a retry recovers it).
        let (transition, started) = decide(.active(fresh), .rejected(token: fresh.token, .superseded))
        #expect(transition.state == .exchanging(fresh, 7) && started == [fresh])
    }

    @Test func expiredAnswerForAnOldTokenReplaysWithTheNewerOne() {
        let (transition, started) = decide(.active(newer), .rejected(token: expired.token, .expired))
        #expect(transition.actions == [.send(newer)] && started.isEmpty)
    }

    @Test func lateLoginRequiredForAnOldTokenNeverClearsTheNewerBundle() {
        for reason in [LoginRequiredReason.tokenReused, .revoked(.reuseDetected), .sessionExpired, .exchangeWindowClosed, .tokenInvalid] {
            let (transition, _) = decide(.active(newer), .rejected(token: expired.token, .loginRequired(reason)))
            #expect(transition.state == .active(newer) && transition.actions == [.send(newer)], "\(reason)")
        }
    }

    @Test func loginRequiredForTheHeldTokenClearsPublishesAndFails() {
        for reason in [LoginRequiredReason.tokenReused, .revoked(.loggedInElsewhere), .sessionExpired, .exchangeWindowClosed, .tokenInvalid] {
            let (transition, started) = decide(.active(fresh), .rejected(token: fresh.token, .loginRequired(reason)))
            #expect(transition.state == .loggedOut(reason), "\(reason)")
            #expect(transition.actions == [.clearStore(ifHolding: fresh.token), .publish(.loginRequired(reason)), .fail(.loginRequired(reason))])
            #expect(started.isEmpty)
        }
    }

    @Test func successfulExchangeActivatesTheSuccessor() {
        for outcome in [ExchangeOutcome.exchanged(newer), .adopted(newer)] {
            let (transition, _) = decide(.exchanging(expired, 3), .exchangeFinished(old: expired.token, outcome))
            #expect(transition.state == .active(newer) && transition.actions == [.publish(.refreshed(generation: 1))])
        }
    }

    @Test func exchangeEndingInLoginRequiredLogsOutAndPublishes() {
        let (transition, _) = decide(.exchanging(expired, 3), .exchangeFinished(old: expired.token, .loginRequired(.tokenReused)))
        #expect(transition.state == .loggedOut(.tokenReused) && transition.actions == [.publish(.loginRequired(.tokenReused))])
    }

    @Test func failedExchangeKeepsTheBundle() {
        // A timeout is not the server's answer: the user stays logged in, the next request
        // tries again with the same token (supabase-swift logs out here; Baton does not).
        let failure = BatonClientError.transport(code: -1001, description: "timed out")
        let (transition, _) = decide(.exchanging(expired, 3), .exchangeFinished(old: expired.token, .failed(failure)))
        #expect(transition.state == .active(expired) && transition.actions.isEmpty)
    }

    @Test func exchangeFinishingAfterALoginOrLogoutChangesNothing() {
        for state in [SessionState<Int>.active(newer), .loggedOut(.loggedOut), .exchanging(newer, 4)] {
            for outcome in [ExchangeOutcome.exchanged(fresh), .loginRequired(.tokenReused), .failed(.cancelled)] {
                let (transition, _) = decide(state, .exchangeFinished(old: expired.token, outcome))
                #expect(transition.state == state && transition.actions.isEmpty, "\(state) \(outcome)")
            }
        }
    }

    @Test func awaitedExchangeSendsTheHeldTokenWithoutAnotherExpiryCheck() {
        let shortLived = TokenBundle(token: "bt1_short", expiresAt: now)  // shorter than the margin
        let (transition, started) = decide(.active(shortLived), .exchangeAwaited)
        #expect(transition.actions == [.send(shortLived)] && started.isEmpty)
    }

    @Test func loggedOutSessionFailsRequestsWithItsReason() {
        for input in [SessionInput.tokenNeeded(now: now), .exchangeAwaited, .rejected(token: "x", .expired)] {
            let (transition, started) = decide(.loggedOut(.revoked(.evicted)), input)
            #expect(transition.actions == [.fail(.loginRequired(.revoked(.evicted)))] && started.isEmpty)
        }
    }

    @Test func restoreHappensOnceAndAnEmptyStoreIsLoggedOut() {
        #expect(decide(.uninitialized, .restored(nil)).0.state == .loggedOut(.notLoggedIn))
        #expect(decide(.uninitialized, .restored(fresh)).0.state == .active(fresh))
        #expect(decide(.active(newer), .restored(fresh)).0.state == .active(newer))
    }

    @Test func exchangeRequestedAtLaunchStartsTheSharedExchange() {
        let (transition, started) = decide(.active(fresh), .exchangeRequested)
        #expect(transition.state == .exchanging(fresh, 7) && started == [fresh])
        #expect(decide(.loggedOut(.notLoggedIn), .exchangeRequested).0.actions.isEmpty)
    }

    @Test func loginReplacesAnyStateAndLogoutEndsIt() {
        #expect(decide(.exchanging(expired, 3), .loggedIn(newer)).0 == .init(state: .active(newer), actions: [.publish(.loggedIn)]))
        #expect(decide(.active(fresh), .loggedOut).0 == .init(state: .loggedOut(.loggedOut), actions: [.publish(.loggedOut)]))
    }

    @Test func serverErrorsMapToRejections() {
        #expect(Rejection(ServerError(code: "token_expired")) == .expired)
        #expect(Rejection(ServerError(code: "token_superseded")) == .superseded)
        #expect(Rejection(ServerError(code: "chain_revoked", reason: "logged_in_elsewhere")) == .loginRequired(.revoked(.loggedInElsewhere)))
        #expect(Rejection(ServerError(code: "token_reused")) == .loginRequired(.tokenReused))
        #expect(Rejection(ServerError(code: "session_expired")) == .loginRequired(.sessionExpired))
        #expect(Rejection(ServerError(code: "exchange_window_closed")) == .loginRequired(.exchangeWindowClosed))
        #expect(Rejection(ServerError(code: "token_invalid")) == .loginRequired(.tokenInvalid))
        #expect(Rejection(ServerError(code: "token_missing")) == nil)
        #expect(Rejection(ServerError(code: "invalid_credentials")) == nil)
    }

    /// Issue 41: a successor the store refused replaces the held token only once saved, and only
    /// while the session still holds the token it replaced.
    @Test func aSavedSuccessorReplacesTheTokenItSucceeds() {
        let (saved, _) = decide(.active(expired), .successorSaved(old: expired.token, newer))
        #expect(saved.state == .active(newer) && saved.actions == [.publish(.refreshed(generation: 1))])
        let (stale, _) = decide(.active(fresh), .successorSaved(old: expired.token, newer))
        #expect(stale.state == .active(fresh) && stale.actions.isEmpty)
        let (loggedOut, _) = decide(.loggedOut(.loggedOut), .successorSaved(old: expired.token, newer))
        #expect(loggedOut.state == .loggedOut(.loggedOut) && loggedOut.actions.isEmpty)
    }
}

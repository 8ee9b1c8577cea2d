@_spi(Simulation) @testable import BatonClient
import Foundation
import Testing

/// When a claim's owner is certainly gone (issue 41): a table of owners against this launch.
struct ClaimOwnerLivenessTests {
    static let me = ClaimOwner(pid: 100, processName: "BankApp", launch: "launch-now")

    static func liveness(exclusive: Bool) -> ClaimOwnerLiveness {
        ClaimOwnerLiveness(current: me, isSessionAlive: { $0 == "alive-session" }, isProcessRunning: { $0 != 666 },
                           launchesAreExclusive: exclusive)
    }

    @Test(arguments: [
        // (owner, session, exclusive launches (iOS), certainly gone)
        (ClaimOwner?.none, "any", true, false),  // an older client's claim: the lease decides
        (me, "alive-session", false, false),  // a session of this launch that still exists
        (me, "released-session", false, true),  // this launch, its session released
        (ClaimOwner(pid: 666, processName: "BankApp", launch: "before"), "s", false, true),  // its process no longer runs
        (ClaimOwner(pid: 200, processName: "BankApp", launch: "before"), "s", true, true),  // iOS: an earlier launch of this app
        (ClaimOwner(pid: 200, processName: "BankApp", launch: "before"), "s", false, false),  // Linux: may be a second instance
        (ClaimOwner(pid: 200, processName: "BankWidget", launch: "other"), "s", true, false),  // the extension, running
    ] as [(ClaimOwner?, String, Bool, Bool)])
    func ownerIsCertainlyGoneOnlyWhenThisProcessCanTell(_ owner: ClaimOwner?, _ session: String, _ exclusive: Bool, _ gone: Bool) {
        #expect(Self.liveness(exclusive: exclusive).isCertainlyGone(owner, session: session) == gone)
    }

    @Test func aClaimOfAGoneOwnerIsNotRespectedEvenWithinItsLease() {
        let bundle = TokenBundle(token: "bt1_t", expiresAt: .distantFuture, chainID: "c", generation: 3)
        let claim = ExchangeClaim(owner: "released-session", chainID: "c", generation: 3, startedAt: Date(), lease: 600,
                                  renewedAtUptime: 10, ownerProcess: Self.me)
        #expect(claim.isLive(for: bundle, at: Date(), uptime: 11))
        #expect(!claim.isRespected(for: bundle, at: Date(), uptime: 11, liveness: Self.liveness(exclusive: false)))
        var alive = claim
        alive.owner = "alive-session"
        #expect(alive.isRespected(for: bundle, at: Date(), uptime: 11, liveness: Self.liveness(exclusive: false)))
    }
}

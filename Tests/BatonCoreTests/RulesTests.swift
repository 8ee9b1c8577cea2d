@testable import BatonCore
import Testing

/// The pure decisions; BatonStoreTests proves the same rules end to end on SQLite.
struct RulesTests {
    let start = Instant(milliseconds: 1_800_000_000_000)
    var policy = Policy()

    func chain(generation: Int = 3, presented: Bool = false, revoked: RevocationReason? = nil, issuedAt: Instant? = nil) -> ChainHead {
        ChainHead(id: ChainID(rawValue: 9), userID: 1, deviceID: "phone-1", deviceClass: .mobile, createdAt: start,
                  generation: generation, hash: Digest.sha256([1]), issuedAt: issuedAt ?? start,
                  expiresAt: (issuedAt ?? start) + .seconds(900), presented: presented, revocation: revoked)
    }

    func token(generation: Int, hash: [UInt8] = Digest.sha256([2])) -> PresentedToken {
        PresentedToken(chainID: ChainID(rawValue: 9), generation: generation, hash: TokenHash(bytes: hash))
    }

    @Test func precedenceIsInvalidThenRevokedThenSessionThenRule() {
        let revoked = chain(revoked: .logout)
        let late = start + policy.maxSession
        #expect(Rules.verify(.unknown, revoked, now: late, policy) == .rejected(.tokenInvalid))
        #expect(Rules.verify(.consumed(nil), revoked, now: late, policy) == .rejected(.chainRevoked(.logout)))
        #expect(Rules.verify(.consumed(nil), chain(), now: late, policy) == .rejected(.sessionExpired))
        // verify: token_superseded > token_expired.
        #expect(Rules.verify(.consumed(nil), chain(), now: start + .seconds(901), policy) == .rejected(.tokenSuperseded))
        #expect(Rules.verify(.head, chain(), now: start + .seconds(900), policy) == .rejected(.tokenExpired))
        #expect(Rules.verify(.head, chain(), now: start + .seconds(899), policy) == .accepted)
    }

    @Test func aDisabledUsersChainIsRevokedForEveryOperation() {
        var disabled = chain()
        disabled.isUserDisabled = true
        let now = start + .seconds(10)
        let refused = BatonError.chainRevoked(.userDisabled)
        #expect(Rules.verify(.head, disabled, now: now, policy) == .rejected(refused))
        #expect(Rules.exchange(.head, disabled, token: token(generation: 3), context: .init(), now: now, policy) == .rejected(refused))
        #expect(Rules.logout(.head, disabled, now: now, policy) == .rejected(refused))
        #expect(Rules.confirm(.head, disabled, passwordMatches: true, now: now, policy) == .rejected(refused))
        // A consumed token of a disabled user's chain is not a reuse (nothing is revoked twice).
        #expect(Rules.exchange(.consumed(nil), disabled, token: token(generation: 2), context: .init(), now: now, policy) == .rejected(refused))
        // token_invalid still comes first; a recorded revocation keeps its own reason.
        #expect(Rules.verify(.unknown, disabled, now: now, policy) == .rejected(.tokenInvalid))
        disabled.revocation = .reuseDetected
        #expect(Rules.verify(.head, disabled, now: now, policy) == .rejected(.chainRevoked(.reuseDetected)))
    }

    @Test func exchangeWindowClosesAfterExpiryPlusWindow() {
        let deadline = start + .seconds(900) + policy.exchangeWindow
        #expect(Rules.exchange(.head, chain(), token: token(generation: 3), context: .init(), now: deadline - .seconds(1), policy) == .advance)
        #expect(Rules.exchange(.head, chain(), token: token(generation: 3), context: .init(), now: deadline, policy) == .rejected(.exchangeWindowClosed))
        // token_reused > exchange_window_closed.
        #expect(Rules.exchange(.consumed(nil), chain(), token: token(generation: 1), context: .init(), now: deadline, policy) == .reuse(nil))
    }

    @Test func lostResponseRetryNeedsEveryCondition() {
        let parent = token(generation: 2)
        let device = RequestContext(deviceID: "phone-1")
        let soon = start + .seconds(5)
        #expect(Rules.exchange(.consumed(nil), chain(), token: parent, context: device, now: soon, policy) == .retry)
        #expect(Rules.exchange(.consumed(nil), chain(presented: true), token: parent, context: device, now: soon, policy) == .reuse(nil))
        #expect(Rules.exchange(.consumed(nil), chain(), token: parent, context: device, now: start + .seconds(10), policy) == .reuse(nil))
        #expect(Rules.exchange(.consumed(nil), chain(), token: parent, context: RequestContext(deviceID: "other"), now: soon, policy) == .reuse(nil))
        #expect(Rules.exchange(.consumed(nil), chain(), token: parent, context: RequestContext(), now: soon, policy) == .reuse(nil))
        #expect(Rules.exchange(.consumed(nil), chain(), token: token(generation: 1), context: device, now: soon, policy) == .reuse(nil))
        var strict = policy
        strict.retryGrace = .zero
        #expect(Rules.exchange(.consumed(nil), chain(), token: parent, context: device, now: soon, strict) == .reuse(nil))
    }

    @Test func standingComparesHeadThenLineageRows() {
        let head = chain()
        let headToken = token(generation: 3, hash: head.hash)
        #expect(Rules.standing(of: headToken, in: head, sameGeneration: []) == .head)
        #expect(Rules.standing(of: token(generation: 4), in: head, sameGeneration: []) == .unknown)
        #expect(Rules.standing(of: token(generation: 3), in: head, sameGeneration: []) == .unknown)
        #expect(Rules.standing(of: token(generation: 3), in: head, sameGeneration: [(Digest.sha256([2]), .replaced)]) == .replacedSibling)
        let record = ExchangeRecord(at: start, ip: "10.0.0.1", userAgent: nil, deviceID: "phone-1")
        #expect(Rules.standing(of: token(generation: 1), in: head, sameGeneration: [(Digest.sha256([2]), .exchanged(record))]) == .consumed(record))
        #expect(Rules.standing(of: token(generation: 1), in: head, sameGeneration: []) == .consumed(nil))
    }

    @Test func loginEvictsOldestBeyondLimitAndSameDeviceClass() {
        var limited = policy
        limited.maxChainsPerUser = 2
        let ids = (1...3).map { ChainID(rawValue: Int64($0)) }
        let live: [(id: ChainID, deviceClass: DeviceClass)] = [(ids[0], .web), (ids[1], .mobile)]
        #expect(Rules.chainsToRevokeForLogin(live: live, deviceClass: .desktop, limited).map(\.0) == [ids[0]])
        limited.oneChainPerDeviceClass = true
        let doomed = Rules.chainsToRevokeForLogin(live: live, deviceClass: .mobile, limited)
        #expect(doomed.map(\.0) == [ids[1]])
        #expect(doomed.map(\.1) == [.loggedInElsewhere])
        limited.maxChainsPerUser = 0
        limited.oneChainPerDeviceClass = false
        #expect(Rules.chainsToRevokeForLogin(live: live, deviceClass: .mobile, limited).isEmpty)
    }
}

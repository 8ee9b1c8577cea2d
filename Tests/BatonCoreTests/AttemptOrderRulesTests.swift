@testable import BatonCore
import Testing

/// R3b: an exchange attempt numbered no higher than the attempt that made the head is answered
/// without touching anything, within R3a's window; outside it, or unnumbered, the rules are R3a
/// and R3 as they were.
struct AttemptOrderRulesTests {
    let start = Instant(milliseconds: 1_800_000_000_000)
    var policy = Policy()

    /// A head at generation 3 made by attempt `attempt` (nil: unnumbered), issued at `start`.
    func chain(attempt: Int?, presented: Bool = false, bound: Bool = false) -> ChainHead {
        ChainHead(id: ChainID(rawValue: 9), userID: 1, deviceID: "phone-1", deviceClass: .mobile, createdAt: start,
                  generation: 3, hash: Digest.sha256([1]), issuedAt: start, expiresAt: start + .seconds(900), presented: presented,
                  revocation: nil, jkt: bound ? String(repeating: "k", count: 43) : nil, attempt: attempt)
    }

    let parent = PresentedToken(chainID: ChainID(rawValue: 9), generation: 2, hash: TokenHash(bytes: Digest.sha256([2])))
    let grandparent = PresentedToken(chainID: ChainID(rawValue: 9), generation: 1, hash: TokenHash(bytes: Digest.sha256([3])))

    func attempt(_ number: Int?, device: String = "phone-1") -> RequestContext {
        var context = RequestContext(deviceID: device)
        context.exchangeAttempt = number
        return context
    }

    /// The parent's exchange record: issued at `start` minus its lifetime, so its window is open.
    var record: ExchangeRecord { ExchangeRecord(at: start, ip: nil, userAgent: nil, deviceID: "phone-1", tokenIssuedAt: start - .seconds(60)) }

    @Test func anEarlierAttemptArrivingAfterTheLaterOneMadeTheHeadChangesNothing() {
        let soon = start + .seconds(3)
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(1), now: soon, policy)
            == .attemptSuperseded(headAttempt: 2))
    }

    @Test func aCopyOfTheAttemptThatMadeTheHeadChangesNothing() {
        // A duplicating network or a gateway's resend: the same number arrives twice.
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(2), now: start + .seconds(3), policy)
            == .attemptSuperseded(headAttempt: 2))
    }

    @Test func aLaterAttemptIsTheLostResponseRetry() {
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(3), now: start + .seconds(3), policy)
            == .retry)
    }

    @Test func anEarlierAttemptAfterTheHeadWasPresentedStillChangesNothingWithinTheGrace() {
        // The client used the successor of attempt 2, then its abandoned attempt 1 arrived.
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2, presented: true), token: parent, context: attempt(1),
                               now: start + .seconds(3), policy) == .attemptSuperseded(headAttempt: 2))
        // A later number for a presented head is reuse, as without numbers.
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2, presented: true), token: parent, context: attempt(3),
                               now: start + .seconds(3), policy) == .reuse(record))
    }

    @Test func anEarlierAttemptAfterTheGraceIsReuse() {
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(1),
                               now: start + policy.retryGrace, policy) == .reuse(record))
    }

    @Test func anEarlierAttemptFromAnotherDeviceIdIsReuse() {
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(1, device: "laptop-9"),
                               now: start + .seconds(3), policy) == .reuse(record))
    }

    @Test func anOlderGenerationsLateAttemptChangesNothingWithinItsWindowOnly() {
        // The grandparent was exchanged at `start` (record.at): its late attempt, made before
        // that, arrives after the chain moved on twice (baton-sim seed 52630).
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2, presented: true, bound: true), token: grandparent,
                               context: attempt(1), now: start + .seconds(59), policy) == .attemptSuperseded(headAttempt: 1))
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2, bound: true), token: grandparent, context: attempt(1),
                               now: start + .seconds(60), policy) == .reuse(record))
        // Bearer: the chain's device id, within the grace.
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: grandparent, context: attempt(1),
                               now: start + .seconds(3), policy) == .attemptSuperseded(headAttempt: 1))
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: grandparent, context: attempt(1, device: "laptop-9"),
                               now: start + .seconds(3), policy) == .reuse(record))
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: grandparent, context: attempt(1),
                               now: start + policy.retryGrace, policy) == .reuse(record))
        // Unnumbered: reuse, as before.
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2, bound: true), token: grandparent, context: attempt(nil),
                               now: start + .seconds(3), policy) == .reuse(record))
    }

    @Test func withoutANumberOnEitherSideTheRulesAreR3aAsBefore() {
        let soon = start + .seconds(3)
        #expect(Rules.exchange(.consumed(record), chain(attempt: nil), token: parent, context: attempt(1), now: soon, policy) == .retry)
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(nil), now: soon, policy) == .retry)
    }

    @Test func strictServersHaveNoWindowSoNoSupersededAnswer() {
        var strict = policy
        strict.retryGrace = .zero
        #expect(Rules.exchange(.consumed(record), chain(attempt: 2), token: parent, context: attempt(1), now: start + .seconds(3), strict)
            == .reuse(record))
    }

    @Test func aBoundChainsEarlierAttemptChangesNothingWithinTheParentsWindowWhateverTheDeviceId() {
        // A bound chain's caller proved the key before the rules; X-Device-Id plays no part.
        let later = start + .seconds(120)
        #expect(Rules.exchange(.consumed(record), chain(attempt: 4, presented: true, bound: true), token: parent,
                               context: attempt(3, device: "other"), now: later, policy) == .attemptSuperseded(headAttempt: 4))
        let closed = start - .seconds(60) + policy.tokenTTL + policy.exchangeWindow
        #expect(Rules.exchange(.consumed(record), chain(attempt: 4, bound: true), token: parent, context: attempt(3), now: closed, policy)
            == .reuse(record))
    }
}

import BatonCore
import BatonOperations
import BatonStorage
import Testing

/// `ProofFailureLog`: a chain's refused proofs coalesced per window, with the clock injected
/// (issue 28, findings 2b and 3).
struct ProofFailureLogTests {
    let start = Instant(milliseconds: 1_790_000_000_000)

    func refusal(_ chain: Int64, _ failure: String = "key_mismatch", ip: String = "192.0.2.1") -> AuditEvent {
        AuditEvent(kind: .proofFailed, userID: 1, username: "alice", chainID: ChainID(rawValue: chain), generation: 0,
                   context: RequestContext(ip: ip), detail: ["failure": .string(failure), "scheme": .string("dpop")])
    }

    func counts(_ events: [(AuditEvent, Instant)]) -> [Int64] {
        events.map { if case .int(let count)? = $0.0.detail["count"] { count } else { -1 } }
    }

    @Test func aFloodIsItsFirstRefusalThenOneCountedEventPerWindow() {
        let log = ProofFailureLog(window: .seconds(10))
        #expect(log.note(refusal(7), at: start))  // the writer starts
        for index in 1..<500 { #expect(!log.note(refusal(7, ip: "192.0.2.\(index % 250)"), at: start + .milliseconds(Int64(index)))) }
        let first = log.due(at: start + .seconds(1))
        #expect(counts(first.events) == [1] && first.again)
        #expect(log.due(at: start + .seconds(9)).events.isEmpty)
        let closed = log.due(at: start + .seconds(10))
        #expect(counts(closed.events) == [499])
        #expect(closed.events.first?.0.context.ip == "192.0.2.249")  // the last one's address
        // The flood stopped: the reopened window ends with nothing, and the writer stops.
        let idle = log.due(at: start + .seconds(20))
        #expect(idle.events.isEmpty && !idle.again)
    }

    @Test func chainsAreCoalescedApart() {
        let log = ProofFailureLog(window: .seconds(10))
        _ = log.note(refusal(1), at: start)
        _ = log.note(refusal(2), at: start)
        _ = log.note(refusal(1, "bad_signature"), at: start + .seconds(1))
        #expect(counts(log.due(at: start + .seconds(2)).events) == [1, 1])
        let closed = log.due(at: start + .seconds(11)).events
        #expect(closed.map(\.0.chainID) == [ChainID(rawValue: 1)] && counts(closed) == [1])
        #expect(closed.first?.0.detail["failure"] == .string("bad_signature"))
    }

    @Test func aRefusalAfterTheWindowOpensANewOne() {
        let log = ProofFailureLog(window: .seconds(10))
        _ = log.note(refusal(1), at: start)
        _ = log.note(refusal(1), at: start + .seconds(5))
        // No flush in between: the late refusal closes the old window (count 1) and opens one.
        _ = log.note(refusal(1), at: start + .seconds(12))
        #expect(counts(log.due(at: start + .seconds(12)).events) == [1, 1, 1])
    }

    @Test func windowZeroWritesEachRefusal() {
        let log = ProofFailureLog(window: .zero)
        for index in 0..<3 { _ = log.note(refusal(1), at: start + .milliseconds(Int64(index))) }
        let due = log.due(at: start + .milliseconds(3))
        #expect(counts(due.events) == [1, 1, 1] && !due.again)
    }

    @Test func openWindowsAreBoundedAndDrainedAtShutdown() {
        let log = ProofFailureLog(window: .seconds(10), capacity: 2)
        for chain in 1...3 { _ = log.note(refusal(Int64(chain)), at: start) }
        _ = log.note(refusal(1), at: start + .seconds(1))
        #expect(log.dropped == 1)  // the third chain found no window
        #expect(counts(log.due(at: start + .seconds(1)).events) == [1, 1])
        #expect(counts(log.drain(at: start + .seconds(2))) == [1])
    }
}

import Foundation
import Glibc

/// What the relay does to one request, decided when the request arrives.
enum RelayAction: Sendable, Equatable {
    case pass
    /// Not forwarded; the client's connection is closed.
    case dropRequest
    /// Forwarded; the answer is not, the client's connection is closed when it arrives.
    case dropAnswer
    /// Forwarded; the answer is held (swallowed) until the client gives up and closes.
    case stallAnswer
    /// Forwarded; half of the answer is, then the client's connection is reset.
    case resetMidAnswer
    /// A copy goes to the server first (its answer discarded), then the request itself.
    case duplicateAhead
    /// The request and its answer pass, then a copy goes to the server (its answer discarded).
    case duplicateLate
    /// The device's processes are stopped (SIGSTOP) as the request goes out, for longer than
    /// the retry grace; the answer is delivered to the stopped process, or lost.
    case suspend(loseAnswer: Bool)
    /// Forwarded; the answer is lost and the device goes offline for longer than the grace.
    case offlineAfterAnswer
    /// The device goes offline now (this request is lost) for longer than a token's life.
    case goOffline
}

/// The relay's view of one simulated device: its fault kind, the seeded dice, whether it is
/// offline, its processes (to stop them), and the counts of exchange requests and faults.
final class DeviceLink: @unchecked Sendable {
    let kind: FaultKind
    /// The chance that an occasion of `kind` gets the fault.
    let rate: Double
    /// How long "away" lasts for the by-design faults: past the server's retry grace.
    let awayPastGrace: TimeInterval
    /// How long "offline" lasts: past a token's lifetime.
    let offlineSpan: TimeInterval
    private let lock = NSLock()
    private var random: SeededRandom
    private var offlineUntil = Date.distantPast
    private var exchangeRequests = 0
    private var faults = 0
    private var processIDs: [pid_t] = []

    init(kind: FaultKind, rate: Double, seed: UInt64, awayPastGrace: TimeInterval, offlineSpan: TimeInterval) {
        self.kind = kind
        self.rate = rate
        random = SeededRandom(seed: seed)
        self.awayPastGrace = awayPastGrace
        self.offlineSpan = offlineSpan
    }

    /// The exchange requests the device sent (copies made by the relay not counted) and the
    /// faults injected.
    var counts: (exchangeRequests: Int, faults: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (exchangeRequests, faults)
    }

    /// Counts a fault injected outside the relay (a kill, a theft).
    func countFault() {
        lock.lock()
        faults += 1
        lock.unlock()
    }

    /// The device's live processes (set by its runner as they start and end).
    var pids: [pid_t] {
        get { lock.lock(); defer { lock.unlock() }; return processIDs }
        set { lock.lock(); processIDs = newValue; lock.unlock() }
    }

    var isOffline: Bool {
        lock.lock()
        defer { lock.unlock() }
        return Date() < offlineUntil
    }

    func goOffline(for seconds: TimeInterval) {
        lock.lock()
        offlineUntil = max(offlineUntil, Date().addingTimeInterval(seconds))
        lock.unlock()
    }

    /// The fate of a request whose first bytes are `head`.
    func decide(head: String) -> RelayAction {
        let isExchange = head.hasPrefix("POST /v1/exchange")
        let isApp = head.hasPrefix("GET /v1/verify")
        lock.lock()
        defer { lock.unlock() }
        if isExchange { exchangeRequests += 1 }
        let hit = (isExchange && kind.hitsExchanges || isApp && kind == .offline) && random.chance(rate)
        guard hit else { return .pass }
        faults += 1
        switch kind {
        case .dropRequest: return .dropRequest
        case .dropAnswer: return .dropAnswer
        case .stallAnswer: return .stallAnswer
        case .resetMidAnswer: return .resetMidAnswer
        case .duplicateRequest: return .duplicateAhead
        case .duplicateLate: return .duplicateLate
        case .suspendKept: return .suspend(loseAnswer: false)
        case .suspendLost: return .suspend(loseAnswer: true)
        case .offlineAfterCommit: return .offlineAfterAnswer
        case .offline:
            offlineUntil = Date().addingTimeInterval(offlineSpan)
            return .goOffline
        case .none, .killBeforePersist, .sharedStore, .clockOff, .theft: return .pass
        }
    }

    /// Stops the device's processes now and resumes them after `awayPastGrace`.
    func suspendProcesses() {
        let stopped = pids
        for pid in stopped { kill(pid, SIGSTOP) }
        DispatchQueue.global().asyncAfter(deadline: .now() + awayPastGrace) {
            for pid in stopped { kill(pid, SIGCONT) }
        }
    }
}

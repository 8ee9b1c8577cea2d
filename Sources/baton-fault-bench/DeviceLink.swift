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
    /// Forwarded; the answer is held this long, then delivered.
    case delayAnswer(TimeInterval)
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
    /// Until when every exchange request is lost (idle-after-failure: the schedule must fail).
    private var outageUntil = Date.distantPast
    /// The file the device's processes read their wall clock's offset from (clock-jump).
    let clockFile: String?
    private var clockOffset: TimeInterval = 0
    /// The tokens sent to exchange (hashed), to count a token sent twice.
    private var exchangedTokens: Set<Int> = []
    private var repeats = 0

    init(kind: FaultKind, rate: Double, seed: UInt64, awayPastGrace: TimeInterval, offlineSpan: TimeInterval, clockFile: String? = nil) {
        self.kind = kind
        self.clockFile = clockFile
        self.rate = rate
        random = SeededRandom(seed: seed)
        self.awayPastGrace = awayPastGrace
        self.offlineSpan = offlineSpan
        if let clockFile { Self.write(offset: 0, to: clockFile) }
    }

    /// Ends the exchange outage of idle-after-failure (the device reported the failure).
    func endOutage() {
        lock.lock()
        outageUntil = .distantPast
        lock.unlock()
    }

    /// The exchange requests the device sent (copies made by the relay not counted) and the
    /// faults injected.
    var counts: (exchangeRequests: Int, faults: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (exchangeRequests, faults)
    }

    /// Exchange requests that carried a token already sent to exchange: the client's retries
    /// (R3a) and takeovers of another process's claim. In clock-jump, with no request lost and
    /// answers in time, any is a claim lease fooled by the moved wall clock.
    var repeatedExchanges: Int {
        lock.lock()
        defer { lock.unlock() }
        return repeats
    }

    /// Notes the token of an exchange request whose head is `head` (its Authorization value).
    func noteExchange(head: String) {
        guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("authorization:") }) else { return }
        lock.lock()
        defer { lock.unlock() }
        if !exchangedTokens.insert(line.split(separator: " ").last.map { $0.hashValue } ?? 0).inserted { repeats += 1 }
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
        // idle-after-failure: once a schedule is hit, every retry is lost at once (a fast
        // failure), until the device reports the failure (or 30 s at most).
        if isExchange && Date() < outageUntil { return .dropRequest }
        // idle-after-failure always hits the third exchange too: a short run has one to show.
        let forced = isExchange && kind == .idleAfterFailure && exchangeRequests == 3
        let hit = forced || (isExchange && kind.hitsExchanges || isApp && kind == .offline) && random.chance(rate)
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
        case .slowAnswer: return .delayAnswer(Double.random(in: 0.6...2.5, using: &random))
        case .idleAfterFailure:
            outageUntil = Date().addingTimeInterval(30)
            // Half the time the first attempt reaches the server (committed, answer lost).
            return random.chance(0.5) ? .dropAnswer : .dropRequest
        case .clockJump:
            // Away from the right time by 2 h, or back to it: both directions, in turn.
            clockOffset = clockOffset == 0 ? (random.chance(0.5) ? 7200 : -7200) : 0
            if let clockFile { Self.write(offset: clockOffset, to: clockFile) }
            // Held, but well within the 2-s attempt timeout: the client has no cause to retry.
            return .delayAnswer(Double.random(in: 0.5...1.2, using: &random))
        case .none, .killBeforePersist, .sharedStore, .clockOff, .theft, .keyTheft: return .pass
        }
    }

    /// Sets the device's wall clock offset for every process at once (written, then renamed).
    private static func write(offset: TimeInterval, to path: String) {
        let temporary = path + ".new"
        _ = FileManager.default.createFile(atPath: temporary, contents: Data("\(offset)\n".utf8))
        rename(temporary, path)
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

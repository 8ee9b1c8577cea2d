/// What can go wrong in one seed's world, and how often: drawn from the seed itself (swarm
/// testing: each seed turns its own subset of faults on, at its own rates, so that rare
/// combinations get runs where they are frequent). `calm` has none of them: the run that
/// checks exchanges per token lifetime.
struct FaultMix: Sendable, CustomStringConvertible {
    /// Whether chains are bound to the device key (DPoP); Bearer otherwise.
    var bound = true
    /// A request lost before the server (the server never sees it).
    var requestDrop = 0.0
    /// An answer lost after the server committed (the client sees nothing, until its deadline).
    var answerDrop = 0.0
    /// The connection reset after the server answered (the client sees a transport error).
    var answerReset = 0.0
    /// A request delivered twice (a duplicating network, a gateway's resend).
    var duplicate = 0.0
    /// A request or answer held for long (up to `slowMax`): a congested network, a queue.
    var slow = 0.0
    var slowMax: Duration = .seconds(5)
    /// Each way's usual delay, in milliseconds: a good network (2-120), or a slow one, every
    /// answer late (3G, roaming: 400-1,500 each way; issue 29's H2).
    var latencyMs: ClosedRange<Int> = 2...120
    /// Store calls that fail, each: a save (disk full), a load (locked Keychain), the lock.
    var saveFailure = 0.0
    var loadFailure = 0.0
    var lockFailure = 0.0
    /// Kill-and-relaunch events of the app over the run (iOS ends apps every day).
    var kills = 0
    /// An app extension sharing the store, with its own session and workload.
    var hasExtension = false
    /// Server restarts over the run.
    var serverRestarts = 0
    /// Token-key rotations over the run.
    var keyRotations = 0
    /// The device's wall clock off the server's, and jumps of it (the user sets the clock).
    var clockSkew: Duration = .zero
    var clockJumps = 0
    /// The app suspended (its timers and answers held) this many times, for up to a minute.
    var suspensions = 0
    /// A thief copies the stored token (and, if `thiefHasKey`, the device key) at some moment
    /// and uses it later.
    var thief = false
    var thiefHasKey = false
    /// The device key lost once (the Keychain item gone): the user must log in again.
    var keyLoss = false

    /// No fault at all.
    static let calm = FaultMix()

    /// Whether nothing can go wrong (the exchanges-per-lifetime check applies).
    var isCalm: Bool { description == Self.calm.description && bound }

    /// The mix for a seed's world random source.
    static func draw(_ random: inout SimRandom) -> FaultMix {
        var mix = FaultMix()
        mix.bound = random.chance(0.8)
        if random.chance(0.1) { return mix }  // a calm world: one in ten
        func rate(_ on: Double, _ maximum: Double, _ random: inout SimRandom) -> Double {
            random.chance(on) ? random.uniform(0.005, maximum) : 0
        }
        mix.requestDrop = rate(0.4, 0.2, &random)
        mix.answerDrop = rate(0.4, 0.2, &random)
        mix.answerReset = rate(0.3, 0.1, &random)
        mix.duplicate = rate(0.3, 0.15, &random)
        mix.slow = rate(0.4, 0.3, &random)
        // A Bearer chain's retry is recognised within the grace (10 s) only: a network that
        // holds a request longer than that is one R3a cannot serve (docs/reliability.md).
        mix.slowMax = .milliseconds(Int64(random.uniform(500, mix.bound ? 20_000 : 4_000)))
        if random.chance(0.25) { mix.latencyMs = 400...1500 }
        mix.saveFailure = rate(0.3, 0.3, &random)
        mix.loadFailure = rate(0.3, 0.2, &random)
        mix.lockFailure = rate(0.2, 0.1, &random)
        mix.kills = random.chance(0.4) ? random.int(1...4) : 0
        mix.hasExtension = random.chance(0.3)
        mix.serverRestarts = random.chance(0.2) ? random.int(1...2) : 0
        mix.keyRotations = random.chance(0.2) ? random.int(1...2) : 0
        mix.clockSkew = random.chance(0.3) ? .seconds(random.int(-600...600)) : .zero
        mix.clockJumps = random.chance(0.2) ? random.int(1...3) : 0
        mix.suspensions = random.chance(0.3) ? random.int(1...3) : 0
        mix.thief = random.chance(0.25)
        mix.thiefHasKey = mix.thief && mix.bound && random.chance(0.5)
        mix.keyLoss = mix.bound && random.chance(0.05)
        return mix
    }

    var description: String {
        var parts: [String] = [bound ? "bound" : "bearer"]
        func add(_ name: String, _ value: Double) { if value > 0 { parts.append("\(name)=\(Int(value * 1000))‰") } }
        func add(_ name: String, _ value: Int) { if value > 0 { parts.append("\(name)=\(value)") } }
        if latencyMs != FaultMix.calm.latencyMs { parts.append("slow-network") }
        add("request-drop", requestDrop); add("answer-drop", answerDrop); add("answer-reset", answerReset)
        add("duplicate", duplicate); add("slow", slow)
        if slow > 0 { parts.append("slow-max=\(slowMax)") }
        add("save-failure", saveFailure); add("load-failure", loadFailure); add("lock-failure", lockFailure)
        add("kills", kills); add("server-restarts", serverRestarts); add("key-rotations", keyRotations)
        add("clock-jumps", clockJumps); add("suspensions", suspensions)
        if hasExtension { parts.append("extension") }
        if clockSkew != .zero { parts.append("skew=\(clockSkew)") }
        if thief { parts.append(thiefHasKey ? "thief+key" : "thief") }
        if keyLoss { parts.append("key-loss") }
        return parts.joined(separator: " ")
    }
}

extension SimRandom {
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { p > 0 && uniform(0, 1) < p }
    /// Uniform in `low..<high`.
    mutating func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * (Double(next() >> 11) / Double(1 << 53))
    }
    /// Uniform in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + next(below: range.count) }
    /// A duration uniform in `low...high` (milliseconds).
    mutating func duration(_ low: Duration, _ high: Duration) -> Duration {
        let lowMs = Int(low / .milliseconds(1)), highMs = Int(high / .milliseconds(1))
        return .milliseconds(int(lowMs...max(lowMs, highMs)))
    }
}

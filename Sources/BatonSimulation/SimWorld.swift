@_spi(Simulation) import BatonClient
import BatonCore
import Foundation

/// One seed's world: the server, the device's store, the app's launches (and an extension's),
/// the network between them, a thief, the faults the seed drew, and the observer that checks
/// the invariants after every step that anyone outside the code can see. Everything random
/// comes from one source seeded by the seed; the schedule of Swift tasks comes from the
/// deterministic executor, seeded by the same seed. Same seed, same run, same digest.
final class SimWorld: @unchecked Sendable {
    let seed: UInt64
    var random: SimRandom
    let mix: FaultMix
    let options: SimOptions
    private(set) var server: SimServer!
    private(set) var store: SimCredentialStore!
    let monotonicBase = ContinuousClock.now
    /// The device's wall clock off the simulation's (skew, then the user's jumps).
    var deviceClockOffset: Duration
    var processes: [SimProcess] = []
    private var serial = 0
    private var ids: UInt64 = 0
    /// The event log (the schedule that ran) and its digest.
    private(set) var eventLog: [String] = []
    private var digestState: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Invariant violations, in order.
    private(set) var violations: [String] = []
    /// What the observer knows (`SimObserver.swift`).
    var observed = Observed()
    /// Set when the run winds down: workloads stop starting calls.
    var isWindingDown = false

    init(seed: UInt64, options: SimOptions) {
        self.seed = seed
        self.options = options
        random = SimRandom(seed: seed ^ 0x5EED_0F_BA70_2026)
        mix = options.mix ?? FaultMix.draw(&random)
        deviceClockOffset = mix.clockSkew
    }

    /// Drops what the world holds once its result is taken. Tasks still suspended at the end
    /// of a run (a dead process's, hung on purpose; sleeps past the end) are never resumed, and
    /// they keep the world itself: without this, each seed kept its server, store, processes
    /// and log, about 600 KB, so a long campaign grew by gigabytes.
    func releaseAfterRun() {
        server = nil
        store = nil
        processes = []
        eventLog = []
        observed = Observed()
    }

    // MARK: The run

    /// Runs the world to its end and checks what is left to check.
    func run() async {
        log("seed \(seed): \(mix)")
        do {
            server = try SimServer(directory: options.directory + "/baton-sim-\(ProcessInfo.processInfo.processIdentifier)-seed-\(seed)", clock: SimWallClock())
        } catch {
            violate("the server did not start: \(error)")
            return
        }
        defer { server.close() }
        store = SimCredentialStore(world: self)
        launch("app")
        if mix.hasExtension { launch("extension", after: random.duration(.seconds(1), .seconds(600))) }
        scheduleFaults()
        try? await SimClock().sleep(for: options.length)
        isWindingDown = true
        log("winding down")
        // Every call still in flight must end: the longest is a request timeout per replay and
        // an exchange's schedule; four request timeouts cover it with room.
        try? await SimClock().sleep(for: .seconds(120))
        checkAtTheEnd()
    }

    /// Starts a launch of `name` (now, or after a pause).
    func launch(_ name: String, after delay: Duration = .zero) {
        SimClock.schedule(after: delay) { [self] in
            let process = SimProcess(id: processes.count + 1, name: name, world: self)
            processes.append(process)
            log("p\(process.id) \(name) launched")
            process.tasks.append(Task { await self.workload(of: process) })
            process.tasks.append(Task { await self.watchEvents(of: process) })
        }
    }

    /// Kills the live launch of `name`, and relaunches it after a pause.
    func killAndRelaunch(_ name: String) {
        guard let process = processes.last(where: { $0.name == name && !$0.isDead }) else { return }
        log("p\(process.id) killed")
        process.kill()
        store.kill(process.id)
        launch(name, after: random.duration(.milliseconds(100), .seconds(120)))
    }

    // MARK: What the environments ask

    func deviceNow() -> Date {
        Date(timeIntervalSince1970: Double(SimWallClock.epochMilliseconds) / 1000 + Double(SimClock.now.nanoseconds) / 1e9
             + Double(deviceClockOffset.components.seconds))
    }

    func newID() -> UUID {
        ids += 1
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: ids >> (8 * UInt64(7 - index))) }
        bytes[0] = UInt8(truncatingIfNeeded: seed)
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }

    func isSessionAlive(_ session: String) -> Bool {
        processes.contains { !$0.isDead && $0.session?.sessionID == session }
    }

    func isRunning(pid: Int32) -> Bool { processes.contains { $0.pid == pid && !$0.isDead } }

    func nextSerial() -> Int {
        serial += 1
        return serial
    }

    // MARK: Faults

    /// Whether a fault of probability `p` happens now; logged when it does.
    func fault(_ p: Double, _ what: String, process: Int) -> Bool {
        guard p > 0, random.chance(p) else { return false }
        log(what)
        return true
    }

    /// The seed's scheduled faults: kills, restarts, rotations, clock jumps, suspensions, the
    /// thief, a lost key; each at a moment of its own within the run.
    private func scheduleFaults() {
        let length = options.length
        func someMoment() -> Duration { random.duration(.seconds(5), length - .seconds(5)) }
        for _ in 0..<mix.kills {
            let name = mix.hasExtension && random.chance(0.3) ? "extension" : "app"
            SimClock.schedule(after: someMoment()) { [self] in killAndRelaunch(name) }
        }
        for _ in 0..<mix.serverRestarts {
            SimClock.schedule(after: someMoment()) { [self] in
                log("server restarts")
                do { try server.restart() } catch { violate("the server did not restart: \(error)") }
            }
        }
        for _ in 0..<mix.keyRotations {
            SimClock.schedule(after: someMoment()) { [self] in
                log("token key rotated")
                do { try server.rotateKey() } catch { violate("key rotation failed: \(error)") }
            }
        }
        for _ in 0..<mix.clockJumps {
            let jump = Duration.seconds(random.int(-3600...3600))
            SimClock.schedule(after: someMoment()) { [self] in
                deviceClockOffset += jump
                log("device clock jumps \(jump)")
            }
        }
        for _ in 0..<mix.suspensions {
            let span = random.duration(.seconds(1), .seconds(60))
            SimClock.schedule(after: someMoment()) { [self] in
                // One launch at a time (iOS suspends the app while its extension runs, and back).
                let live = processes.filter { !$0.isDead }
                guard !live.isEmpty else { return }
                let process = live[random.next(below: live.count)]
                process.suspendedUntil = SimClock.now.advanced(by: span)
                log("p\(process.id) suspended for \(span)")
            }
        }
        if mix.keyLoss {
            SimClock.schedule(after: someMoment()) { [self] in
                log("device key lost")
                store.loseKey()
                observed.keyLostAt = SimClock.now
            }
        }
        if mix.thief { scheduleThief(stealAt: someMoment()) }
    }

    // MARK: The log

    func log(_ line: String) {
        let stamped = "\(Self.format(SimClock.now)) \(line)"
        for byte in stamped.utf8 {
            digestState ^= UInt64(byte)
            digestState = digestState &* 0x100_0000_01b3
        }
        digestState ^= 0x0A
        digestState = digestState &* 0x100_0000_01b3
        if options.keepsLog { eventLog.append(stamped) }
    }

    /// The digest of the event log: FNV-1a 64 of its lines.
    var digest: String { String(format: "%016llx", digestState) }

    func violate(_ what: String) {
        log("VIOLATION: \(what)")
        violations.append("\(Self.format(SimClock.now)) \(what)")
    }

    static func format(_ instant: SimClock.Instant) -> String {
        let milliseconds = instant.nanoseconds / 1_000_000
        return String(format: "%6lld.%03lld", milliseconds / 1000, milliseconds % 1000)
    }

    static func describe(_ credentials: StoredCredentials) -> String {
        guard let bundle = credentials.bundle else { return "no bundle" + (credentials.claim == nil ? "" : " +claim") }
        return "generation \(bundle.generation)" + (credentials.claim.map { " claim(attempt \($0.lastAttempt ?? 0))" } ?? "")
    }

    /// Suspends forever: what a dead process's waits do.
    static func hangForever() async {
        await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
    }
}

/// How a run is set up beyond its seed.
struct SimOptions: Sendable {
    /// Where the seed's database goes (a tmpfs directory where there is one).
    var directory: String
    /// Simulated time the workload runs.
    var length: Duration = .seconds(1800)
    /// A fixed fault mix instead of the seed's own (tests; the calm check).
    var mix: FaultMix?
    /// Whether the event log's lines are kept (to print a failing seed's schedule).
    var keepsLog = false
}

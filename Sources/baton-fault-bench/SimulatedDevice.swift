import Foundation
import Glibc

/// What every simulated device shares: the programs, the account, the server.
struct BenchSetup: Sendable {
    let devicePath: String
    let username: String
    let password: String
    let serverPort: UInt16
    let tokenLifetime: TimeInterval
    /// Multiplies every fault rate (`--fault-scale`).
    let faultScale: Double
    let directory: String
    /// Whether the devices bind their chains to a device key (DPoP).
    let bound: Bool
}

/// One simulated device: its processes of `baton-fault-device` (two sharing one store for the
/// shared-store and clock-jump kinds), its relay, and what happened to it. It runs until it has
/// lived `budget` token lifetimes: a logout is recorded and followed by a new login (the user
/// logs in again); a process killed before persisting is restarted on the same store, and so
/// is one that crashed or exited unasked (counted: it must not happen), in restore mode.
final class SimulatedDevice: @unchecked Sendable {
    let kind: FaultKind
    private let setup: BenchSetup
    private let relay: FaultRelay
    private let storePath: String
    private let budget: Int
    private let lock = NSLock()
    private var random: SeededRandom
    private var processes: [ChildProcess] = []
    private var chains: [String: Int] = [:]
    private var advances = 0
    private var loggedOutChains: Set<String> = []
    private var thieves: [any StolenCopy] = []
    private var failures: [String: Int] = [:]
    private var logoutReasons: [String: Int] = [:]
    private var loginFailures: [String: Int] = [:]
    private var killedForFault = false
    /// Processes this runner ended on purpose (a fault's kill, the partner of a logged-out one).
    private var killed: Set<pid_t> = []
    /// Processes that crashed or exited unasked, by how ("exit 66", "signal 11").
    private var crashes: [String: Int] = [:]
    /// Whether the last process to end crashed: the next start restores the store.
    private var restoreAfterCrash = false
    private var isFinished = false
    private let done = DispatchSemaphore(value: 0)

    init(index: Int, kind: FaultKind, setup: BenchSetup, budget: Int, seed: UInt64) throws {
        self.kind = kind
        self.setup = setup
        self.budget = budget
        random = SeededRandom(seed: seed)
        storePath = setup.directory + "/device-\(index).json"
        let link = DeviceLink(kind: kind, rate: kind.rate(scaledBy: setup.faultScale), seed: seed ^ 0xA5A5_5A5A, awayPastGrace: Self.awayPastGrace,
                              offlineSpan: setup.tokenLifetime * 2.5, clockFile: kind == .clockJump ? storePath + ".clock" : nil)
        relay = try FaultRelay(to: setup.serverPort, link: link)
    }

    /// Starts the device's first login.
    func start() {
        lock.lock()
        defer { lock.unlock() }
        launch(restoring: false)
    }

    /// Ends the device now (the run's time limit), whatever its budget.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        finishLocked()
    }

    /// Waits until every process of the device has ended after its budget was reached.
    func wait() { done.wait() }

    /// Token lifetimes lived so far.
    var lifetimes: Int {
        lock.lock()
        defer { lock.unlock() }
        return advances
    }

    /// The device's outcome (call after `wait()`).
    var tally: Tally {
        lock.lock()
        defer { lock.unlock() }
        // A theft refused for want of the key touched nothing: a logout of its chain is false.
        let stolen = Set(thieves.filter { !$0.wasRefusedWithoutKey }.map(\.chainID))
        let missed = thieves.filter { !$0.wasStopped && !loggedOutChains.contains($0.chainID) }
        let counts = relay.link.counts
        return Tally(devices: 1, lifetimes: advances, exchangeRequests: counts.exchangeRequests,
                     repeatedExchanges: relay.link.repeatedExchanges, faults: counts.faults,
                     forcedLogouts: loggedOutChains.subtracting(stolen).count, thefts: thieves.count,
                     theftsDetected: thieves.count - missed.count, crashes: crashes.values.reduce(0, +), crashKinds: crashes,
                     failures: failures, logoutReasons: logoutReasons,
                     missedThefts: Dictionary(missed.map { ($0.outcome, 1) }, uniquingKeysWith: +), loginFailures: loginFailures)
    }

    // MARK: - Processes (all below run with `lock` held)

    private func launch(restoring: Bool) {
        launchProcess(restoring: restoring, remaining: kind.processCount)
    }

    /// Starts one process; the second of a shared pair starts once the first is ready.
    private func launchProcess(restoring: Bool, remaining: Int) {
        var arguments = ["http://127.0.0.1:\(relay.port)", storePath, setup.username, setup.password, restoring ? "restore" : "login"]
        if kind == .killBeforePersist { arguments.append("--announce-saves") }
        if !setup.bound { arguments.append("--unbound") }
        if let clockFile = relay.link.clockFile { arguments += ["--clock-file", clockFile] }
        if kind == .idleAfterFailure { arguments += ["--idle-after-failure", String(Int(Self.awayPastGrace))] }
        if kind == .clockOff {
            arguments += ["--clock-offset", random.chance(0.5) ? "7200" : "-7200"]
            if random.chance(0.5) {
                arguments += ["--clock-jump-after", String(Int.random(in: 2...20, using: &random)),
                              "--clock-jump", random.chance(0.5) ? "7200" : "-7200"]
            }
        }
        let process: ChildProcess
        do {
            process = try ChildProcess(setup.devicePath, arguments,
                                       onLine: { [weak self] process, line in self?.handle(line, secondPending: remaining > 1, from: process) },
                                       onExit: { [weak self] process, status in self?.exited(process, status: status) })
        } catch {
            failures["cannot start the device process: \(error)", default: 0] += 1
            finishLocked()
            return
        }
        processes.append(process)
        relay.link.pids = processes.map(\.pid)
    }

    private func handle(_ line: String, secondPending: Bool, from process: ChildProcess) {
        lock.lock()
        defer { lock.unlock() }
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        switch words.first {
        case "ready":
            if secondPending && !isFinished { launchProcess(restoring: true, remaining: 1) }
        case "chain" where words.count == 3:
            guard let generation = Int(words[2]) else { break }
            let chain = words[1]
            if let known = chains[chain] {
                if generation > known {
                    advances += generation - known
                    chains[chain] = generation
                    if kind.isTheft { maybeSteal() }
                }
            } else {
                chains[chain] = generation
            }
            if advances >= budget { finishLocked() }
        case "logout" where words.count >= 2:
            if words[1] != "-", !loggedOutChains.contains(words[1]) {
                loggedOutChains.insert(words[1])
                logoutReasons[words.count == 3 ? words[2] : "-", default: 0] += 1
            }
            // A shared pair starts again together: the other process is ended too.
            for other in processes where other.pid != process.pid { kill(other) }
        case "fail" where words.count >= 2 && words[1] == "login":
            loginFailures[words.dropFirst(2).joined(separator: " "), default: 0] += 1
        case "fail":
            failures[words.dropFirst().joined(separator: " "), default: 0] += 1
            if kind == .idleAfterFailure { relay.link.endOutage() }  // the schedule failed: the app goes idle
        case "persisting":
            if !isFinished && random.chance(relay.link.rate) {
                relay.link.countFault()
                killedForFault = true
                for each in processes { kill(each) }
            } else {
                process.send("continue")
            }
        default:
            failures["unexpected output: \(line.prefix(60))", default: 0] += 1
        }
    }

    /// Ends `process` on purpose (SIGKILL): its end is no crash.
    private func kill(_ process: ChildProcess) {
        killed.insert(process.pid)
        process.signal(SIGKILL)
    }

    private func exited(_ process: ChildProcess, status: Int32) {
        lock.lock()
        defer { lock.unlock() }
        processes.removeAll { $0.pid == process.pid }
        relay.link.pids = processes.map(\.pid)
        let wasKilled = killed.remove(process.pid) != nil
        // Status 3 is the device's logout (reported on its output); any other end that nobody
        // asked for is a crash, and the store it left is restored, never replaced by a login.
        let loggedOut = status & 0x7f == 0 && (status >> 8) & 0xff == 3
        if !wasKilled && !isFinished && !loggedOut {
            let how = status & 0x7f == 0 ? "exit \((status >> 8) & 0xff)" : "signal \(status & 0x7f)"
            crashes[how, default: 0] += 1
            // The partner of a shared pair goes on; the crashed one comes back on the store.
            if processes.isEmpty { restoreAfterCrash = true } else { launchProcess(restoring: true, remaining: 1) }
        }
        guard processes.isEmpty else { return }
        if isFinished {
            relay.stop()
            done.signal()
            return
        }
        let restore = killedForFault || restoreAfterCrash
        killedForFault = false
        restoreAfterCrash = false
        launch(restoring: restore)
    }

    /// A thief copies the stored bundle (and, for theft-with-key, the key file) now and uses it
    /// a moment later (one theft at a time;
    /// always one on the third token, so that even a short run has a theft to catch; none in
    /// the last lifetimes, which would end before the theft could be noticed).
    private func maybeSteal() {
        guard advances <= budget - Self.theftFreeTail, random.chance(relay.link.rate) || thieves.isEmpty && advances >= 3,
              thieves.allSatisfy({ loggedOutChains.contains($0.chainID) || $0.wasStopped }) else { return }
        let delay = Double.random(in: 0...setup.tokenLifetime, using: &random), span = setup.tokenLifetime * 8
        if kind == .keyTheft {
            guard let thief = KeyThief(copying: storePath, to: storePath + ".thief-\(thieves.count)", setup: setup),
                  !loggedOutChains.contains(thief.chainID) else { return }
            thieves.append(thief)
            thief.start(after: delay, for: span)
        } else {
            guard let thief = Thief(copying: storePath, serverPort: setup.serverPort), !loggedOutChains.contains(thief.chainID) else { return }
            thieves.append(thief)
            thief.start(after: delay, for: span)
        }
        relay.link.countFault()
    }

    /// The last lifetimes of a device's budget, without a new theft: the thief uses the copy
    /// within one lifetime, the device exchanges the same token within another.
    static let theftFreeTail = 5

    /// How long "away" lasts (suspended, offline after a commit, idle after a failed
    /// schedule): past the server's default retry grace, 10 s.
    static let awayPastGrace: TimeInterval = 12

    private func finishLocked() {
        guard !isFinished else { return }
        isFinished = true
        for thief in thieves { thief.stop() }
        if processes.isEmpty {
            relay.stop()
            done.signal()
        }
        for process in processes {
            process.signal(SIGCONT)
            process.signal(SIGTERM)
        }
    }
}

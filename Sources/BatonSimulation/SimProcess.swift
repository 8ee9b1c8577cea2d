@_spi(Simulation) import BatonClient
import Foundation

/// One launch of the app (or of its extension): a shipped `BatonSession` on the shared store,
/// with an environment whose clocks, sleeps, identifiers, randomness, processes and network
/// are the simulation's. Killed, it does nothing more that anyone can see: its sleeps and
/// answers never end, its store writes never land, its lock is released.
final class SimProcess: @unchecked Sendable {
    let id: Int
    /// "app" or "extension": launches of one name exclude each other (iOS).
    let name: String
    let pid: Int32
    let launch: String
    private(set) var session: BatonSession!
    private(set) var isDead = false
    /// While suspended (iOS suspends an app in the background), its timers and answers wait.
    var suspendedUntil: SimClock.Instant?
    /// App calls in flight now (a live process's are checked to end).
    var callsInFlight = 0
    var tasks: [Task<Void, Never>] = []

    init(id: Int, name: String, world: SimWorld) {
        self.id = id
        self.name = name
        pid = Int32(1000 + id)
        launch = "launch-\(id)"
        let owner = ClaimOwner(pid: pid, processName: name, launch: launch)
        let liveness = ClaimOwnerLiveness(
            current: owner,
            isSessionAlive: { [weak world] session in world?.isSessionAlive(session) ?? false },
            isProcessRunning: { [weak world] pid in world?.isRunning(pid: pid) ?? false },
            launchesAreExclusive: true)
        let monotonicBase = world.monotonicBase
        let environment = ClientEnvironment(
            wallClock: { [weak world] in world?.deviceNow() ?? Date(timeIntervalSince1970: 0) },
            uptime: { Double(SimClock.now.nanoseconds) / 1e9 + 100 },
            monotonicNow: { monotonicBase.advanced(by: .nanoseconds(SimClock.now.nanoseconds)) },
            sleep: { [weak self] duration in try await self?.sleep(for: duration) },
            newID: { [weak world] in world?.newID() ?? UUID() },
            randomBytes: { [weak world] count in world?.randomBytes(count) ?? [UInt8](repeating: 0, count: count) },
            claimLiveness: liveness,
            network: .roundTrip(world.roundTrip(for: self)))
        var configuration = BatonConfiguration(baseURL: URL(string: SimServer.publicURL)!, appName: "SimBank/1",
                                               now: { [weak world] in world?.deviceNow() ?? Date(timeIntervalSince1970: 0) })
        configuration.deviceBinding = world.mix.bound ? .on : .off
        // The simulation's tokens live 2 minutes (many lifetimes per run); a 5 s margin keeps
        // the share of a lifetime given up to the margin near the default's with 15-minute tokens.
        configuration.expiryMargin = 5
        // No installation marker: the simulation touches no file outside its world (and never
        // calls resetIfFirstLaunch).
        configuration.installationMarker = .none
        // The client's own account of what it decided goes into the log beside what it did.
        configuration.diagnostics = { [weak world] diagnostic in
            guard let world else { return }
            // A chain's id is random per run; its short name is not (the log stays replayable).
            let fields = diagnostic.metadata.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.key == "chain" ? world.observed.chainNames[$0.value] ?? $0.value : $0.value)" }.joined(separator: " ")
            world.log("p\(id) client: \(diagnostic.message)\(fields.isEmpty ? "" : " (\(fields))")")
            world.observe(diagnostic, of: id)
        }
        session = BatonSession(configuration: configuration, store: world.store.view(for: id), environment: environment)
    }

    /// The environment's sleep: simulated time; held while suspended; never ends once dead.
    func sleep(for duration: Duration) async throws {
        if isDead { await SimWorld.hangForever() }
        try await SimClock().sleep(for: duration)
        while let resume = suspendedUntil, resume > SimClock.now {
            try await SimClock().sleep(until: resume)
        }
        if isDead { await SimWorld.hangForever() }
    }

    /// The process dies where it stands.
    func kill() {
        isDead = true
        for task in tasks { task.cancel() }
    }
}

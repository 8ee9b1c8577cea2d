import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who holds an exchange claim, beyond its session id: the process (pid and name) and that
/// process's launch (random per launch). It lets a session tell a dead owner's claim from a
/// live one's, so that a relaunch after the app was killed mid-exchange does not wait out the
/// dead launch's lease (often longer than a background task lives).
public struct ClaimOwner: Codable, Sendable, Equatable {
    /// The owner's process id.
    public var pid: Int32
    /// The owner's process name (`ProcessInfo.processName`: the app's or extension's executable).
    public var processName: String
    /// Random per process launch; equal only for sessions of one launch.
    public var launch: String

    /// An owner from its parts.
    public init(pid: Int32, processName: String, launch: String) {
        self.pid = pid
        self.processName = processName
        self.launch = launch
    }

    /// This process's launch.
    static let current = ClaimOwner(pid: getpid(), processName: ProcessInfo.processInfo.processName, launch: UUID().uuidString)
}

/// Decides whether a claim's owner is certainly gone, from what this process can see: a pure
/// function of the owner, this launch, the sessions alive in this launch and whether the
/// owner's pid runs, so that each case is a table test (and a simulation can inject them:
/// `ClientEnvironment.claimLiveness`).
@_spi(Simulation) public struct ClaimOwnerLiveness: Sendable {
    /// This process's launch.
    @_spi(Simulation) public var current: ClaimOwner
    /// Whether `sessionID` is a `BatonSession` alive in this launch.
    @_spi(Simulation) public var isSessionAlive: @Sendable (String) -> Bool
    /// Whether a process with this pid runs now: false only when the system says there is none
    /// (`kill(pid, 0)` fails with ESRCH); true when it does or may (EPERM: another app's).
    @_spi(Simulation) public var isProcessRunning: @Sendable (Int32) -> Bool
    /// Whether two launches of one process name cannot run at once (iOS runs an app, and each
    /// extension, in one process at a time; Linux and macOS may run several).
    @_spi(Simulation) public var launchesAreExclusive: Bool

    /// A liveness from its parts.
    @_spi(Simulation) public init(current: ClaimOwner, isSessionAlive: @escaping @Sendable (String) -> Bool,
                 isProcessRunning: @escaping @Sendable (Int32) -> Bool, launchesAreExclusive: Bool) {
        self.current = current
        self.isSessionAlive = isSessionAlive
        self.isProcessRunning = isProcessRunning
        self.launchesAreExclusive = launchesAreExclusive
    }

    /// The liveness this process sees.
    @_spi(Simulation) public static let live = ClaimOwnerLiveness(
        current: .current, isSessionAlive: { LiveSessions.shared.contains($0) },
        isProcessRunning: { pid in kill(pid, 0) == 0 || errno != ESRCH },
        launchesAreExclusive: {
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            true
            #else
            false
            #endif
        }())

    /// Whether the session `session` of `owner` is certainly gone: a session of this launch that
    /// no longer exists, a process that no longer runs, or (where launches are exclusive) an
    /// earlier launch of this very process name. Nil owner (a claim written by an older
    /// version): never certain, the lease decides.
    func isCertainlyGone(_ owner: ClaimOwner?, session: String) -> Bool {
        guard let owner else { return false }
        if owner.launch == current.launch { return !isSessionAlive(session) }
        if !isProcessRunning(owner.pid) { return true }
        return launchesAreExclusive && owner.processName == current.processName
    }
}

/// The `BatonSession`s alive in this process, by session id: a claim of this launch whose
/// session is not among them was left by a session that ended (its object was released).
final class LiveSessions: @unchecked Sendable {
    static let shared = LiveSessions()
    private let mutex = NSLock()
    private var ids: Set<String> = []  // guarded by mutex

    func insert(_ id: String) { mutex.withLock { _ = ids.insert(id) } }
    func remove(_ id: String) { mutex.withLock { _ = ids.remove(id) } }
    func contains(_ id: String) -> Bool { mutex.withLock { ids.contains(id) } }
}

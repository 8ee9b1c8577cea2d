import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every source of nondeterminism on the session's paths, behind one seam: the wall clock of
/// exchange claims, device uptime, the monotonic clock, sleeping, fresh identifiers, random
/// bytes, the process a claim names and whether a claim's owner still runs, and the network.
/// `live` is what apps get (the public initializers pass it): exactly the calls the client
/// made before the seam existed. A deterministic simulation passes its own, so that the
/// shipped `BatonSession` runs on simulated time against a simulated network (seams, not
/// forks: the simulation links the same types the app links).
///
/// Not behind it, on purpose:
/// - `configuration.now`, public API: the clock of expiry checks, `receivedAt` and the proofs'
///   `iat`. It stays separate from `wallClock` (see there); a simulation sets both.
/// - The credential store and its lock (a simulation brings a `CredentialStore` of its own or
///   `MemoryCredentialStore`); `FileLock`'s deadline and the file stores' temporary names
///   read the real clock and `UUID()`.
/// - The device key's signatures (the store's key; ECDSA signs with a random nonce): a
///   simulation's store can hand out a key of its own through `DeviceKey(x:y:signer:)`.
/// - `ProtectedDataWatch` and `BackgroundActivity`: UIKit / iOS-family only, no-ops on Linux
///   and macOS.
/// - `ConcurrencyLimiter`'s waiter ids: matched for equality in an ordered queue, never
///   ordered or sent, so their values change nothing.
/// - The scheduling of Swift tasks: the simulator owns the executor. And the order in which
///   a dictionary hands out its entries (status and event subscribers, requests cancelled at
///   logout): with ids from `newID` it is fixed only when hashing is too
///   (`SWIFT_DETERMINISTIC_HASHING=1` in the simulator's environment).
@_spi(Simulation) public struct ClientEnvironment: Sendable {
    /// The wall clock that exchange claims are stamped with and compared on
    /// (`ExchangeClaim.startedAt`, `ExchangeClaim.isRespected(for:at:uptime:liveness:)`). Deliberately not
    /// `configuration.now`: every process sharing the store must stamp its claims on the same
    /// clock, and tests set the configuration's clock behind or ahead to drive expiry.
    @_spi(Simulation) public var wallClock: @Sendable () -> Date
    /// Seconds on the device's boot-relative clock (`DeviceUptime.now()`): what a claim's
    /// lease runs on (M5).
    @_spi(Simulation) public var uptime: @Sendable () -> Double
    /// The monotonic clock (`ContinuousClock.now`) that exchange attempts, their deadlines and
    /// the step-up's "challenged since" are measured on. A simulation returns
    /// `base.advanced(by: elapsed)` for a `base` read once.
    @_spi(Simulation) public var monotonicNow: @Sendable () -> ContinuousClock.Instant
    /// Suspends the calling task for a span (`Task.sleep(for:)`): claim polling, the pause
    /// before an exchange retry, an attempt's deadline. Must throw when the calling task is
    /// cancelled (at once, or when cancelled while asleep), as `Task.sleep` does: every caller
    /// reads a throw as cancellation.
    @_spi(Simulation) public var sleep: @Sendable (Duration) async throws -> Void
    /// A fresh identifier (`UUID()`): the session's name in claims (`sessionID`), a device id
    /// made at login, and the keys of status subscribers, event subscribers and requests in
    /// flight (whose order is a dictionary's). Never the same twice in one process.
    @_spi(Simulation) public var newID: @Sendable () -> UUID
    /// `count` bytes from the system's CSPRNG: a DPoP proof's `jti`.
    @_spi(Simulation) public var randomBytes: @Sendable (Int) -> [UInt8]
    /// The process and launch this session's claims name (pid, process name, a random launch
    /// id), and how it tells a dead claim owner from a live one (its sessions alive in this
    /// launch, `kill(pid, 0)`, whether launches of one process name exclude each other).
    @_spi(Simulation) public var claimLiveness: ClaimOwnerLiveness
    /// How a prepared request reaches the server and its answer comes back.
    @_spi(Simulation) public var network: Network

    /// An environment from its parts.
    @_spi(Simulation) public init(wallClock: @escaping @Sendable () -> Date, uptime: @escaping @Sendable () -> Double,
                 monotonicNow: @escaping @Sendable () -> ContinuousClock.Instant,
                 sleep: @escaping @Sendable (Duration) async throws -> Void, newID: @escaping @Sendable () -> UUID,
                 randomBytes: @escaping @Sendable (Int) -> [UInt8], claimLiveness: ClaimOwnerLiveness, network: Network) {
        self.wallClock = wallClock
        self.uptime = uptime
        self.monotonicNow = monotonicNow
        self.sleep = sleep
        self.newID = newID
        self.randomBytes = randomBytes
        self.claimLiveness = claimLiveness
        self.network = network
    }

    /// The device's own clocks, sleep, identifiers, randomness and processes, and the session's
    /// URLSession.
    @_spi(Simulation) public static let live = ClientEnvironment(
        wallClock: { Date() },
        uptime: { DeviceUptime.now() },
        monotonicNow: { ContinuousClock.now },
        sleep: { try await Task.sleep(for: $0) },
        newID: { UUID() },
        randomBytes: { secureRandomBytes($0) },
        claimLiveness: .live,
        network: .urlSession
    )

    /// One HTTP round trip of a prepared request: the answer, whatever its status, or
    /// `.cancelled` (the task running it was cancelled before the answer: the caller's, or a
    /// logout's for an app request), `.transport(code:description:)` (no answer; `code` a
    /// `URLError.Code` raw value, `URLError.timedOut` for a timeout), `.invalidResponse`.
    @_spi(Simulation) public typealias RoundTrip = @Sendable (URLRequest) async -> Result<(Data, HTTPURLResponse), BatonClientError>

    /// How `HTTPTransport` sends. Everything the transport does around the round trip is the
    /// same for both: URL resolution and headers, DPoP proofs and their nonce and refused-proof
    /// resends, the concurrency bound for the app's requests, the logout epoch (a request whose
    /// token predates a logout never goes out), and cancellation by the caller or at logout.
    @_spi(Simulation) public enum Network: Sendable {
        /// The session's URLSession (the app's, or an ephemeral one of its own): each request a
        /// data task with the `RedirectGuard` delegate. What apps get.
        case urlSession
        /// `RoundTrip` instead of URLSession; the URLSession passed to the session is never
        /// used, and the session makes none. It runs in a task of its own that the caller's
        /// cancellation and a logout cancel (its sleeps throw, `Task.isCancelled` turns true):
        /// it should answer `.cancelled` then, as URLSession does, unless it models an answer
        /// that won the race.
        /// What URLSession did is its part now: the request's `timeoutInterval` (an exchange
        /// attempt's is 3600 s: the exchange cancels it when its next attempt goes out or the
        /// exchange ends), redirects (no `RedirectGuard`: a 3xx
        /// is the answer unless it follows them itself), and a transport's resend of a request
        /// whose reused connection died (libcurl under FoundationNetworking does that).
        case roundTrip(RoundTrip)
    }
}

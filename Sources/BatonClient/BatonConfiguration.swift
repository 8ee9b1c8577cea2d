import Foundation

/// How a `BatonSession` talks to the gateway: where, with which headers, how long, how many at once.
public struct BatonConfiguration: Sendable {
    /// The gateway's base URL: Baton's `/v1/…` and the app's API are both under it
    /// (deploy/nginx ships that layout). Relative request URLs are resolved against it.
    public var baseURL: URL
    /// Names the app in the User-Agent (`MyBank/4.2 BatonClient/0.1.0`), e.g. "MyBank/4.2".
    public var appName: String
    /// Headers added to every request (the app's own: locale, API version, ...).
    public var headers: [String: String]
    /// Time for one HTTP request, from sending to the whole answer.
    public var requestTimeout: TimeInterval
    /// Requests of the app in flight at once; more wait their turn. Login, exchange and logout
    /// do not count against it (they must never queue behind the requests that wait for them).
    public var maxConcurrentRequests: Int
    /// A token this close to its expiry is exchanged before the request is sent (at most a
    /// quarter of the token's lifetime is used, whatever this says).
    public var expiryMargin: TimeInterval
    /// How often a lost exchange (no answer, timeout, reset, 5xx, 429) is tried in all, with the
    /// same token and device id (the server's lost-response retry, R3a). Attempts that would not
    /// end within `serverRetryGrace` are never made (`exchangeSchedule`).
    public var exchangeAttempts: Int
    /// The pause before the first retry; it doubles with each further retry.
    public var exchangeRetryDelay: Duration
    /// Time for one exchange attempt, from sending to the whole answer, at least. Short on
    /// purpose: a stalled answer must be retried while the server still recognises the retry
    /// (R3a). On a network whose answers take longer, attempts wait a little longer than the
    /// answers have been taking (RFC 6298's timer, `ExchangeRoundTrips`), at most so long that
    /// two attempts still fit `serverRetryGrace` (and a third of `requestTimeout`): a slow
    /// answer is read instead of being cut and paid for with a retry.
    public var exchangeTimeout: Duration
    /// The server's lost-response retry grace (`baton serve --retry-grace`, 10 s by default):
    /// how long after an exchange the server answers a repeat of it with a fresh successor
    /// instead of revoking the chain as reuse. Set it when the server runs with another value.
    public var serverRetryGrace: Duration
    /// The clock the expiry checks and the proofs' `iat` read (tests inject one that runs behind;
    /// a proof with a wrong `iat` costs one `use_dpop_nonce` round trip, nothing more).
    public var now: @Sendable () -> Date
    /// Whether logins bind the new chain to the device key (RFC 9449 DPoP; on by default). With
    /// `.off`, logins send no proof and get Bearer tokens; a chain bound earlier keeps using its key.
    public var deviceBinding: DeviceBinding = .on
    /// Receives the client's diagnostics (`BatonDiagnostic`: why a session ended, an exchange
    /// failed, a store could not be read; never a token). Nil: the unified log on Apple
    /// platforms (subsystem `BatonClient`), nowhere elsewhere.
    public var diagnostics: (@Sendable (BatonDiagnostic) -> Void)?
    /// Where the installation marker lives, which `BatonSession.resetIfFirstLaunch()` reads to
    /// tell a reinstall from an update (`InstallationMarkerLocation`): `.appGroup(...)` when an
    /// app and its extensions share the store.
    public var installationMarker: InstallationMarkerLocation = .standard
    /// A Face ID / Touch ID confirmation before the app's requests use the token
    /// (`BiometricGate`); nil (the default): none.
    public var biometrics: BiometricGate?

    /// Whether a login binds its chain to the device key.
    public enum DeviceBinding: Sendable {
        /// Logins carry a DPoP proof: the server binds the chain to the key, and the token is
        /// worthless without it.
        case on
        /// Logins carry no proof: Bearer tokens, as before binding existed.
        case off
        /// Logins carry a proof, and a login that cannot make or read the device key fails
        /// (`BatonClientError.deviceKey`) instead of logging in unbound, as `.on` does then
        /// (M10: for servers run with `--dpop required`, and apps that must never hold a Bearer
        /// token).
        case required
    }

    /// A configuration with defaults: 30 s per request, 8 at once, 30 s expiry margin, 3 exchange
    /// attempts of at most 2 s each, starting 250 ms then 500 ms apart (all within 6.75 s, inside
    /// the server's default 10 s retry grace).
    public init(baseURL: URL, appName: String = "BatonApp", headers: [String: String] = [:], requestTimeout: TimeInterval = 30,
                maxConcurrentRequests: Int = 8, expiryMargin: TimeInterval = 30, exchangeAttempts: Int = 3,
                exchangeRetryDelay: Duration = .milliseconds(250), exchangeTimeout: Duration = .seconds(2),
                serverRetryGrace: Duration = .seconds(10), now: @escaping @Sendable () -> Date = { Date() }) {
        self.baseURL = baseURL
        self.appName = appName
        self.headers = headers
        self.requestTimeout = requestTimeout
        self.maxConcurrentRequests = max(1, maxConcurrentRequests)
        self.expiryMargin = expiryMargin
        self.exchangeAttempts = max(1, exchangeAttempts)
        self.exchangeRetryDelay = exchangeRetryDelay
        self.exchangeTimeout = exchangeTimeout
        self.serverRetryGrace = serverRetryGrace
        self.now = now
    }

    /// The exchange attempts actually made: `exchangeAttempts` cut to those that end within
    /// `serverRetryGrace` (checked whenever a session is made; see `ExchangeSchedule`).
    public var exchangeSchedule: ExchangeSchedule {
        ExchangeSchedule(timeout: exchangeTimeout, attempts: exchangeAttempts, firstDelay: exchangeRetryDelay, grace: serverRetryGrace)
    }

    /// The exchange attempts for a bound (DPoP) chain: not cut to `serverRetryGrace`, since the
    /// server accepts the retry of a bound chain, proved by its key, for as long as the
    /// successor was never presented within the exchange window (R3a for bound chains). Fitted
    /// to `boundRetryWindow` instead, far beyond any schedule.
    public var boundExchangeSchedule: ExchangeSchedule {
        ExchangeSchedule(timeout: exchangeTimeout, attempts: exchangeAttempts, firstDelay: exchangeRetryDelay, grace: Self.boundRetryWindow)
    }

    /// The span a bound chain's exchange schedule is fitted to (an exchange window is longer).
    static let boundRetryWindow: Duration = .seconds(300)

    /// This library's version, in the User-Agent.
    public static let libraryVersion = "0.2.0"

    /// The User-Agent every request carries.
    var userAgent: String { "\(appName) BatonClient/\(Self.libraryVersion)" }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every failure `BatonSession` reports. One enum for the whole library: transport, HTTP status
/// with the server's JSON error, and "the user must log in again".
///
/// Switch over this enum with a `default` branch for what your screen does not handle specially.
public enum BatonClientError: Error, Sendable, Equatable {
    /// The request never got an HTTP answer (no connection, timeout, reset). `code` is the
    /// `URLError` code; the description is for logs.
    case transport(code: Int, description: String)
    /// An HTTP answer of 400 or more. `error` is the decoded JSON error when the body (or, for a
    /// gateway's 401, the `X-Baton-Error` header) carries one; `body` is the raw body; `headers`
    /// the response's header fields (names as the server sent them; `retryAfter` reads one).
    case http(status: Int, error: ServerError?, body: Data, headers: [String: String])
    /// The session is over: show the login screen. The reason tells the user why.
    case loginRequired(LoginRequiredReason)
    /// The gateway wants a recent password for this operation (RFC 9470
    /// `insufficient_user_authentication`): ask the user for the password, call
    /// `confirm(password:)`, and send the request again. The session is intact: nothing was
    /// exchanged or cleared. `maxAge` is the seconds the operation allows since the last
    /// authentication, when the gateway said.
    case stepUpRequired(maxAge: Int?)
    /// The server answered something this library cannot read (a bundle without a token, ...).
    case invalidResponse(String)
    /// The request was cancelled (the calling task was cancelled, or the user logged out).
    case cancelled
    /// The credential store failed to read or write (disk full, Keychain status).
    case store(String)
    /// The credentials cannot be read *now*, but are not gone: the Keychain is locked (before the
    /// first unlock since boot, an app prewarmed or woken in the background:
    /// `errSecInteractionNotAllowed`), or the file store answered EACCES, EPERM, EIO, ... The
    /// session is not logged out: show no login screen, try again later (the session reads the
    /// store again at its next call).
    case credentialsUnavailable(String)
    /// The request could not be built (a relative URL without a base URL, ...).
    case invalidRequest(String)
    /// The device key (DPoP) could not be made, read or used: the Secure Enclave or libcrypto
    /// refused, or the Keychain/file holding it failed. The session is not logged out.
    case deviceKey(String)
    /// The user did not confirm with Face ID, Touch ID or the passcode (`BatonConfiguration.biometrics`):
    /// cancelled, failed, or not available here. The request was not sent; nothing is logged out.
    case userAuthentication(String)
}

extension BatonClientError {
    /// The error for an answer of 400 or more, keeping its headers.
    static func http(_ data: Data, _ response: HTTPURLResponse, error: ServerError?) -> BatonClientError {
        var headers: [String: String] = [:]
        for case (let name as String, let value as String) in response.allHeaderFields { headers[name] = value }
        return .http(status: response.statusCode, error: error, body: data, headers: headers)
    }

    /// The seconds an `.http` answer's `Retry-After` asks to wait (delta-seconds form), if any.
    public var retryAfter: TimeInterval? {
        guard case .http(_, _, _, let headers) = self,
              let value = headers.first(where: { $0.key.lowercased() == "retry-after" })?.value else { return nil }
        return TimeInterval(value.trimmingCharacters(in: .whitespaces))
    }
}

extension BatonClientError: LocalizedError {
    /// A sentence for logs and developer-facing alerts (English; apps word their own screens
    /// from the case, e.g. `LoginRequiredReason.defaultMessage`). Never contains a token.
    public var errorDescription: String? {
        switch self {
        case .transport(let code, let description): "No answer from the server (\(code)): \(description)"
        case .http(let status, let error, _, _):
            "The server answered \(status)" + (error.map { " \($0.code)" + ($0.description.map { ": \($0)" } ?? "") } ?? "")
        case .loginRequired(let reason): reason.defaultMessage
        case .stepUpRequired: "This operation needs your password again."
        case .invalidResponse(let why): "The server's answer could not be read: \(why)"
        case .cancelled: "The request was cancelled."
        case .store(let why): "The credential store failed: \(why)"
        case .credentialsUnavailable(let why): "The credentials cannot be read now (not logged out): \(why)"
        case .invalidRequest(let why): "The request could not be built: \(why)"
        case .deviceKey(let why): "The device key could not be used: \(why)"
        case .userAuthentication(let why): "The user did not confirm (not logged out): \(why)"
        }
    }
}

extension BatonClientError {
    /// The error for diagnostics: `errorDescription`, which leaves out an HTTP answer's headers
    /// and body (a gateway's `Set-Cookie` must not reach an app's log handler).
    var diagnosticText: String { errorDescription ?? "error" }
}

/// The JSON error object of Baton's answers and the gateway's
/// (`{"error", "error_description", "reason"?}`, docs/api.md).
public struct ServerError: Sendable, Equatable, Decodable {
    /// The machine-readable code, e.g. `token_expired`, `chain_revoked`, `invalid_credentials`.
    public var code: String
    /// The human-readable description (English; for logs, not for users).
    public var description: String?
    /// With `chain_revoked`: why (`reuse_detected`, `logged_in_elsewhere`, ...).
    public var reason: String?
    /// With `insufficient_user_authentication`: the `max_age` the resource asked for.
    public var maxAge: Int?
    /// With `exchange_attempt_superseded`: the number of the attempt that made the chain's head.
    public var attempt: Int?

    /// An error from its parts.
    public init(code: String, description: String? = nil, reason: String? = nil, maxAge: Int? = nil, attempt: Int? = nil) {
        self.code = code
        self.description = description
        self.reason = reason
        self.maxAge = maxAge
        self.attempt = attempt
    }

    private enum CodingKeys: String, CodingKey {
        case code = "error", description = "error_description", reason, maxAge = "max_age", attempt
    }

    /// The error in a response: the JSON body, or else the `X-Baton-Error` header (verify's
    /// 401s carry the same JSON there, for gateways that drop the body), or else the
    /// `WWW-Authenticate` challenge's `error` and `max_age`. Nil when none of them parses.
    static func from(body: Data, response: HTTPURLResponse) -> ServerError? {
        let challenge = response.value(forHTTPHeaderField: "WWW-Authenticate").map(BearerChallenge.init)
        var error = (try? JSONDecoder().decode(ServerError.self, from: body))
            ?? response.value(forHTTPHeaderField: "X-Baton-Error").flatMap { try? JSONDecoder().decode(ServerError.self, from: Data($0.utf8)) }
            ?? challenge?.error.map { ServerError(code: $0, description: challenge?.parameters["error_description"]) }
        if error?.maxAge == nil, let maxAge = challenge?.maxAge { error?.maxAge = maxAge }
        return error
    }
}

/// Why the user has to log in again. Each case maps to one message on the login screen
/// (docs/client.md lists suggested texts).
public enum LoginRequiredReason: Sendable, Equatable {
    /// Nothing stored: never logged in on this device, or the stored credentials were unreadable.
    case notLoggedIn
    /// The user logged out (in this process or another sharing the store).
    case loggedOut
    /// `token_reused`: the token was exchanged twice, so someone else holds this session; the
    /// server revoked it.
    case tokenReused
    /// `chain_revoked`, with the server's reason.
    case revoked(RevocationReason)
    /// `session_expired`: the login reached its absolute lifetime.
    case sessionExpired
    /// `exchange_window_closed`: the app was away longer than the exchange window.
    case exchangeWindowClosed
    /// `token_invalid`: the server does not know the token (forged, pruned, another server's key).
    case tokenInvalid
    /// The session is bound to a device key (DPoP) that this installation no longer has (the
    /// Keychain item or key file was deleted, the app was restored onto another device): its
    /// tokens cannot be used without it. A new login binds a new key.
    case deviceKeyLost

    /// The reason for a log-in-again answer, or nil when `error` does not end the session
    /// (`token_expired`, `token_superseded`, `invalid_credentials`, ...).
    init?(_ error: ServerError) {
        switch error.code {
        case "token_reused": self = .tokenReused
        case "chain_revoked": self = .revoked(RevocationReason(rawValue: error.reason ?? "unknown"))
        case "session_expired": self = .sessionExpired
        case "exchange_window_closed": self = .exchangeWindowClosed
        case "token_invalid": self = .tokenInvalid
        default: return nil
        }
    }
}

/// Why the server revoked a chain (`reason` of `chain_revoked`). A string-backed value, so a
/// reason added to the server later still arrives intact.
public struct RevocationReason: RawRepresentable, Sendable, Hashable {
    /// The wire string.
    public var rawValue: String
    /// A reason from its wire string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A token was exchanged twice: someone else had a copy. Revoked for the user's security.
    public static let reuseDetected = RevocationReason(rawValue: "reuse_detected")
    /// A token superseded by a lost-response retry was used later.
    public static let forkDetected = RevocationReason(rawValue: "fork_detected")
    /// The session was logged out.
    public static let logout = RevocationReason(rawValue: "logout")
    /// The user logged in on too many devices; this, the oldest session, was ended.
    public static let evicted = RevocationReason(rawValue: "evicted")
    /// The user logged in on another device of the same kind.
    public static let loggedInElsewhere = RevocationReason(rawValue: "logged_in_elsewhere")
    /// The password was changed.
    public static let passwordChanged = RevocationReason(rawValue: "password_changed")
    /// The account was disabled.
    public static let userDisabled = RevocationReason(rawValue: "user_disabled")
    /// An administrator ended the session.
    public static let admin = RevocationReason(rawValue: "admin")
    /// Five wrong passwords in a row at a step-up confirmation: whoever holds this session may
    /// not be its owner.
    public static let confirmFailed = RevocationReason(rawValue: "confirm_failed")
    /// The user signed this session out from another of their devices ("your devices").
    public static let signedOut = RevocationReason(rawValue: "signed_out")
}

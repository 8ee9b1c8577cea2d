import BatonCore
import BatonHTTP

/// The one place where errors become HTTP: status, `error`, `error_description`, `reason`,
/// and the `WWW-Authenticate` / `Retry-After` headers (RFC 6750 §3, RFC 9110 §10.2.3).
enum ErrorResponse {
    static let bearerChallenge = #"Bearer realm="baton""#
    /// The header on every 401 Baton answers, and on every 401 a shipped gateway answers on
    /// Baton's behalf (verify's refusal), which the gateways strip from the application's
    /// answers: BatonClient ends a session only on a 401 that carries it (issue 42, F3), so
    /// the app's own 401s behind the same gateway, whatever their body, end nothing.
    static let refusedHeader = (name: "X-Baton-Refused", value: "true")
    static let invalidTokenChallenge = #"Bearer realm="baton", error="invalid_token""#

    /// RFC 9470 §3: the token is fine but its authentication too old for the resource.
    /// `max_age` is a token (RFC 9110 §11.2 lets an auth-param value be a token or a
    /// quoted-string; clients must accept both).
    static func stepUpChallenge(maxAge: Int64) -> String {
        #"Bearer realm="baton", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="#
            + String(maxAge)
    }

    /// The response for a domain error. A refused DPoP proof is 401 with a `DPoP` challenge
    /// (RFC 9449 §7.1) for a token-presenting request, 400 at login (`atLogin`: no token, so
    /// no authentication scheme to challenge, like §5's token endpoint).
    static func response(for error: BatonError, atLogin: Bool = false) -> HTTPResponse {
        switch error {
        case .invalidDPoPProof(_, let description), .useDPoPNonce(_, let description):
            atLogin ? body(400, error.code, error.message)
                    : body(401, error.code, error.message, headers: [("WWW-Authenticate", DPoPGate.challenge(error: error.code, description: description))])
        case .dpopRequired, .invalidGrant:
            body(400, error.code, error.message)
        case .tokenInvalid, .tokenExpired, .tokenSuperseded, .tokenReused, .sessionExpired, .exchangeWindowClosed:
            body(401, error.code, error.message, headers: [("WWW-Authenticate", invalidTokenChallenge)])
        case .insufficientUserAuthentication(let maxAge):
            body(401, error.code, error.message, members: ["max_age": .int(maxAge)],
                 headers: [("WWW-Authenticate", stepUpChallenge(maxAge: maxAge))])
        case .exchangeAttemptSuperseded(let headAttempt):
            // 409: the request conflicts with the chain's state (a later attempt made its head).
            // The number tells the client which to exceed; nothing about the chain it lacks.
            body(409, error.code, error.message, members: ["attempt": .int(Int64(headAttempt))])
        case .chainRevoked(let reason):
            body(401, error.code, error.message, members: ["reason": .string(reason.rawValue)],
                 headers: [("WWW-Authenticate", invalidTokenChallenge)])
        case .invalidCredentials, .wrongPassword:
            body(401, error.code, error.message, headers: [("WWW-Authenticate", bearerChallenge)])
        case .accountDisabled:
            body(403, error.code, error.message)
        case .tooManyAttempts(let seconds), .tooManyConfirmations(let seconds), .tooManyProofs(let seconds),
             .tooManyRefusedProofs(let seconds):
            body(429, error.code, error.message, headers: [("Retry-After", String(seconds))])
        case .confirmationInProgress:
            body(429, error.code, error.message, headers: [("Retry-After", "1")])
        case .invalidArgument:
            body(400, error.code, error.message)
        case .userExists:
            body(409, error.code, error.message)
        case .userNotFound, .chainNotFound, .sessionNotFound:
            body(404, error.code, error.message)
        case .unavailable:
            body(503, error.code, "The service is temporarily unavailable; retry shortly.", headers: [("Retry-After", "1")])
        }
    }

    /// 401 for a token-bearing request without `Authorization: Bearer` (RFC 6750 §3.1: no error code).
    static let tokenMissing = body(401, .tokenMissing, "Send the token as 'Authorization: Bearer <token>'.",
                                   headers: [("WWW-Authenticate", bearerChallenge)])

    /// 415 for a body that is not `application/json`.
    static let unsupportedMediaType = body(415, .unsupportedMediaType, "Send the body as Content-Type: application/json.")

    /// A JSON error body: `{"error", "error_description"}` plus `members` (`reason` with
    /// chain_revoked, `max_age` with insufficient_user_authentication).
    static func body(_ status: Int, _ code: ErrorCode, _ description: String, members: [String: JSONValue] = [:],
                     headers: [(name: String, value: String)] = []) -> HTTPResponse {
        let object = members.merging(["error": .string(code.rawValue), "error_description": .string(description)]) { $1 }
        let marker = status == 401 ? [refusedHeader] : []
        return .json(status, JSONValue.object(object).text, headers: headers + marker + [("Cache-Control", "no-store")])
    }

    /// The response for a request the server refused while reading it.
    static func response(for rejection: ServerRejection) -> HTTPResponse {
        switch rejection {
        case .malformed(let error):
            let code: ErrorCode = switch error.status {
            case 413: .payloadTooLarge
            case 431: .headersTooLarge
            default: .badRequest
            }
            return body(error.status, code, error.description)
        case .timeout:
            return body(408, .badRequest, "The request was not received in time.")
        case .overloaded:
            return body(503, .unavailable, "Too many connections; retry shortly.", headers: [("Retry-After", "1")])
        }
    }
}

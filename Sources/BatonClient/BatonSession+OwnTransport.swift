import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What to do with a request the app's own stack (Alamofire, its own URLSession code) sent with
/// the session's token and got a 401 for: `BatonSession.handleUnauthorized(response:data:for:)`.
public enum UnauthorizedDecision: Sendable, Equatable {
    /// Authorize the request again (`authorize(_:)`) and send it once more: the token was
    /// exchanged, or a newer one is held already. Bound the replays on your side (twice is plenty).
    case retry
    /// Not the session's matter (another 401, a request without this session's token): hand the
    /// response to the caller as it is.
    case doNotRetry
    /// The session is over: show the login screen with the reason's message (the session has
    /// published `SessionEvent.loginRequired` and cleared the store already).
    case loginRequired(LoginRequiredReason)
    /// The operation needs the password again (RFC 9470): ask, `confirm(password:)`, retry.
    case stepUpRequired(maxAge: Int?)
    /// The exchange could not be made now (offline, timeout, 5xx): the session keeps its token;
    /// fail this request, a later one tries again.
    case failed(BatonClientError)
}

extension BatonSession {
    /// A token to send now: the held one, or its successor when it is about to expire (one
    /// exchange for every caller, across processes sharing the store). For an app that sends
    /// requests through its own networking; prefer `authorize(_:)`, which also sets the device id.
    /// - Throws: `.loginRequired`, `.credentialsUnavailable`, `.transport` (the exchange failed,
    ///   the session keeps its token), `.cancelled`.
    public func validToken() async throws(BatonClientError) -> String {
        try restoreIfNeeded()
        await saveUnsavedSuccessor()
        return try await bundle(for: .tokenNeeded(now: configuration.now())).token
    }

    /// `request` with `Authorization: Bearer …` and `X-Device-Id`, when it goes to the base URL's
    /// origin (scheme, host, port); any other request comes back unchanged, without the token.
    /// - Throws: as `validToken()`.
    public func authorize(_ request: URLRequest) async throws(BatonClientError) -> URLRequest {
        guard let origin = Origin(configuration.baseURL), origin.contains(request.url) else { return request }
        let token = try await validToken()
        var authorized = request
        authorized.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        if let deviceID { authorized.setValue(deviceID, forHTTPHeaderField: "X-Device-Id") }
        return authorized
    }

    /// Decides what a 401 to a request the app sent itself (authorized by `authorize(_:)`) means,
    /// exactly as `send` would: `token_expired` exchanges (once for every caller) and retries,
    /// `token_superseded` retries with the newer token, a log-in-again answer ends the session,
    /// a late answer about an older token only retries with the held one.
    public func handleUnauthorized(response: HTTPURLResponse, data: Data? = nil, for request: URLRequest) async -> UnauthorizedDecision {
        guard response.statusCode == 401,
              let authorization = request.value(forHTTPHeaderField: "Authorization"), authorization.hasPrefix("Bearer "),
              let error = ServerError.from(body: data ?? Data(), response: response) else { return .doNotRetry }
        if error.code == "insufficient_user_authentication" { return .stepUpRequired(maxAge: error.maxAge) }
        guard let rejection = Rejection(error) else { return .doNotRetry }
        do {
            try restoreIfNeeded()
            _ = try await bundle(for: .rejected(token: String(authorization.dropFirst("Bearer ".count)), rejection))
            return .retry
        } catch .loginRequired(let reason) {
            return .loginRequired(reason)
        } catch {
            return .failed(error)
        }
    }
}

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

    /// The request to follow a redirect with, for an app that sends with its own URLSession
    /// delegate or Alamofire's `RedirectHandler`: to another origin than the base URL's, without
    /// `Authorization`, `DPoP` and `X-Device-Id` (never hand a token or a proof to a CDN, a
    /// presigned URL or a hostile redirect); within it, a bound request gets a fresh proof for
    /// the redirect's own method and URL. The session's own requests get this already.
    public func redirected(_ request: URLRequest) async -> URLRequest {
        let key = heldBundle.flatMap { (try? deviceKeyIfHeld(for: $0)) ?? nil }
        return transport.redirected(request, proofKey: key)
    }

    /// `request` with `Authorization` and `X-Device-Id`, when it goes to the base URL's origin
    /// (scheme, host, port); any other request comes back unchanged, without the token. For a
    /// bound chain: `Authorization: DPoP …` and a fresh `DPoP` proof for the request's method and
    /// URL (authorize again for every send, retries included: a proof is good for one request);
    /// else `Authorization: Bearer …`.
    /// - Throws: as `validToken()`; `.loginRequired(.deviceKeyLost)` for a bound chain whose key is gone.
    public func authorize(_ request: URLRequest) async throws(BatonClientError) -> URLRequest {
        guard let origin = Origin(configuration.baseURL), origin.contains(request.url) else { return request }
        try restoreIfNeeded()
        await saveUnsavedSuccessor()
        try await confirmUserIfNeeded()
        let bundle = try await bundle(for: .tokenNeeded(now: configuration.now()))
        var authorized = request
        authorized.setValue(bundle.authorization, forHTTPHeaderField: "Authorization")
        if let deviceID { authorized.setValue(deviceID, forHTTPHeaderField: "X-Device-Id") }
        do {
            if let key = try await proofKey(for: bundle) {
                authorized.setValue(try transport.proof(for: authorized, key: key, nonce: transport.nonces.latest), forHTTPHeaderField: "DPoP")
            }
        } catch .deviceKey(let why) {
            try await endForUnusableKey(of: bundle, why)  // as send does (F11)
        }
        return authorized
    }

    /// Decides what a 401 to a request the app sent itself (authorized by `authorize(_:)`) means,
    /// exactly as `send` would: `token_expired` exchanges (once for every caller) and retries,
    /// `token_superseded` retries with the newer token, a log-in-again answer ends the session,
    /// a late answer about an older token only retries with the held one.
    /// A `use_dpop_nonce` answer keeps the server's nonce and retries (the next `authorize`
    /// puts it into the proof).
    public func handleUnauthorized(response: HTTPURLResponse, data: Data? = nil, for request: URLRequest) async -> UnauthorizedDecision {
        transport.nonces.remember(response)
        // Only Baton's 401s concern the session; the app's own are the app's (F3).
        guard BatonRefusal.isBatons(response), let authorization = request.value(forHTTPHeaderField: "Authorization"),
              let scheme = ["Bearer ", "DPoP "].first(where: authorization.hasPrefix),
              let error = ServerError.from(body: data ?? Data(), response: response) else { return .doNotRetry }
        if error.code == "insufficient_user_authentication" { return .stepUpRequired(maxAge: error.maxAge) }
        let token = String(authorization.dropFirst(scheme.count))
        if DPoPNonces.isNonceChallenge(response, body: data ?? Data(), badRequestCounts: false) { return .retry }
        if error.code == "invalid_dpop_proof", let held = heldBundle, held.token == token, deviceKeyIsGone(for: held) {
            do { _ = try await proofKey(for: held) } catch .loginRequired(let reason) { return .loginRequired(reason) } catch { return .failed(error) }
        }
        guard let rejection = Rejection(error) else { return .doNotRetry }
        do {
            try restoreIfNeeded()
            _ = try await bundle(for: .rejected(token: token, rejection))
            return .retry
        } catch .loginRequired(let reason) {
            return .loginRequired(reason)
        } catch {
            return .failed(error)
        }
    }
}

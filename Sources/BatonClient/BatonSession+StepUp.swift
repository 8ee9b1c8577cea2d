import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension BatonSession {
    /// Confirms the user's password for the session (step-up, RFC 9470): the chain's last
    /// authentication becomes now, so operations that need a recent password (`stepUpRequired`)
    /// pass again. The token is not exchanged.
    /// - Returns: the new authentication time, as the server recorded it.
    /// - Throws: `.http(401, invalid_credentials)` for a wrong password (the session stays; the
    ///   fifth wrong one in a row ends it: `.loginRequired(.revoked(.confirmFailed))`),
    ///   `.http(429, too_many_attempts)`, and everything `send` throws.
    @discardableResult
    public func confirm(password: String) async throws -> Date {
        let data = try await postJSON("v1/confirm", ["password": password])
        return try Self.authTime(in: data)
    }

    /// Confirms the user's authentication with a fresh ID token from the bank's identity provider
    /// instead of a password (docs/identity.md, "Step-up"): for a session that logged in with
    /// `login(idToken:)` (a device-bound chain). The token must carry `auth_time` (ask the
    /// provider for a fresh authentication: `max_age=0` or `prompt=login`) and `identityNonce()`
    /// as its nonce; the chain's authentication time becomes the provider's.
    /// - Returns: the new authentication time, as the server recorded it.
    /// - Throws: `.http(400, invalid_grant)` for a token the server refused (another identity,
    ///   no `auth_time`, used before, …: its description says which), `.http(429, too_many_attempts)`,
    ///   and everything `send` throws.
    @discardableResult
    public func confirm(idToken: String) async throws -> Date {
        let data = try await postJSON("v1/confirm", ["id_token": idToken])
        return try Self.authTime(in: data)
    }

    /// `send(_:password:)` for an account that authenticates at the identity provider: when the
    /// gateway asks for a recent authentication, `idToken` is asked for a fresh ID token (with
    /// the `max_age` the gateway named: pass it to the provider), which confirms; the same
    /// single flight. A nil token (the user cancelled) throws the `stepUpRequired` error. (Its
    /// own name: an overload of `send` would make `send(request) { … }` ambiguous in apps.)
    public func sendConfirmingWithIDToken(_ request: URLRequest,
                                          idToken: @escaping @Sendable (_ maxAge: Int?) async throws -> String?) async throws -> (Data, HTTPURLResponse) {
        let sentAt = environment.monotonicNow()
        do {
            return try await send(request)
        } catch BatonClientError.stepUpRequired(let maxAge) {
            try await stepUp(maxAge: maxAge, challengedSince: sentAt) { maxAge in
                guard let token = try await idToken(maxAge) else { return false }
                try await self.confirm(idToken: token)
                return true
            }
            return try await send(request)
        }
    }

    /// Sends `request`; when the gateway asks for a recent password (`stepUpRequired`), asks
    /// `password` for it (with the `max_age` the gateway named), confirms, and sends the request
    /// once more. A nil password (the user cancelled) throws the `stepUpRequired` error.
    ///
    /// Single flight: however many requests meet the challenge at once, the user is asked once
    /// and the server gets one confirmation (each wrong one counts toward the revocation after
    /// five); the others wait for it and share its outcome. A request sent before a confirmation
    /// that has finished since is replayed without asking.
    public func send(_ request: URLRequest,
                     password: @escaping @Sendable (_ maxAge: Int?) async throws -> String?) async throws -> (Data, HTTPURLResponse) {
        let sentAt = environment.monotonicNow()
        do {
            return try await send(request)
        } catch BatonClientError.stepUpRequired(let maxAge) {
            try await stepUp(maxAge: maxAge, challengedSince: sentAt) { maxAge in
                guard let entered = try await password(maxAge) else { return false }
                try await self.confirm(password: entered)
                return true
            }
            return try await send(request)
        }
    }

    /// The one step-up in flight: starts it, or joins the running one, or returns at once when
    /// one finished after `since` (the request was challenged for an authentication now renewed).
    /// `confirmation` asks the user and confirms (a password or an ID token); false: cancelled.
    private func stepUp(maxAge: Int?, challengedSince since: ContinuousClock.Instant,
                        confirmation: @escaping @Sendable (Int?) async throws -> Bool) async throws {
        if let confirmed = lastStepUp, confirmed > since { return }
        if let running = stepUpInFlight {
            try await running.value
            return
        }
        let task = Task { () async throws -> Void in
            guard try await confirmation(maxAge) else { throw BatonClientError.stepUpRequired(maxAge: maxAge) }
        }
        stepUpInFlight = task
        let result = await task.result
        stepUpInFlight = nil
        if case .success = result { lastStepUp = environment.monotonicNow() }
        try result.value()
    }

    /// Changes the user's password. The current password is itself a confirmation; every other
    /// session of the user ends (`loginRequired(.revoked(.passwordChanged))` there), this one
    /// stays, freshly authenticated.
    /// - Returns: how many other sessions the server ended.
    /// - Throws: `.http(400, invalid_request)` when the new password breaks the rules (8 to 1024
    ///   bytes), `.http(401, invalid_credentials)` for a wrong current password (counted like a
    ///   failed confirmation), and everything `send` throws.
    @discardableResult
    public func changePassword(current: String, new: String) async throws -> Int {
        let data = try await postJSON("v1/password", ["current_password": current, "new_password": new])
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let revoked = object["revoked_chains"] as? Int else {
            throw BatonClientError.invalidResponse("a password change answer without \"revoked_chains\"")
        }
        return revoked
    }

    /// POSTs a JSON object to a Baton endpoint through `send` (so an expired token is exchanged
    /// and the request replayed); the body of the 2xx answer.
    private func postJSON(_ path: String, _ body: [String: String]) async throws -> Data {
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return try await send(request).0
    }

    /// The `auth_time` (RFC 3339) of a confirm or password answer.
    static func authTime(in data: Data) throws -> Date {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let text = object["auth_time"] as? String, let date = ISO8601DateFormatter().date(from: text) else {
            throw BatonClientError.invalidResponse("an answer without a readable \"auth_time\"")
        }
        return date
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The kind of device, for the server's device policy (one chain per class, when configured).
public enum DeviceClass: String, Sendable, CaseIterable {
    case mobile, desktop, web, other
}

extension BatonSession {
    /// Logs in and stores the new bundle (replacing any session held). The device id is the
    /// stored one, or a new random one kept from now on.
    /// - Throws: `BatonClientError.http` with `invalid_credentials` (wrong name or password),
    ///   `account_disabled`, `too_many_attempts` (see `Retry-After`), ...; `.transport`; `.store`.
    public func login(username: String, password: String, deviceClass: DeviceClass = .mobile, deviceName: String? = nil) async throws {
        restoreIfNeeded()
        let lock = try await store.lock()
        defer { lock.unlock() }
        let deviceID = ((try? store.load()) ?? nil)?.deviceID ?? self.deviceID ?? UUID().uuidString.lowercased()
        var body: [String: String] = ["username": username, "password": password, "device_id": deviceID,
                                      "device_class": deviceClass.rawValue]
        if let deviceName { body["device_name"] = deviceName }
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/login"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        let (data, response) = try await transport.send(transport.prepare(request, deviceID: deviceID, token: nil), kind: .session)
        guard response.statusCode == 200 else {
            throw BatonClientError.http(status: response.statusCode, error: ServerError.from(body: data, response: response), body: data)
        }
        let bundle = try TokenBundle.decode(data, receivedAt: configuration.now())
        try store.save(StoredCredentials(deviceID: deviceID, bundle: bundle))  // persisted before use
        adopt(deviceID: deviceID)
        _ = apply(.loggedIn(bundle))
    }

    /// Logs out: requests fail with `loginRequired(.loggedOut)` from now on, the app's requests
    /// in flight are cancelled, an exchange in flight is let finish (so that the newest token is
    /// the one revoked), the server revokes the chain, and the store is cleared.
    /// - Returns: whether the server confirmed the revocation (false offline: the local logout
    ///   happened anyway, and the chain ends on its own when its tokens expire).
    @discardableResult
    public func logout() async -> Bool {
        restoreIfNeeded()
        let pending = pendingExchange
        var token = heldBundle?.token
        _ = apply(.loggedOut)
        transport.cancelAppRequests()
        if let pending {
            switch await pending.value {
            case .exchanged(let successor), .adopted(let successor): token = successor.token
            case .loginRequired, .failed: break
            }
        }
        var tokens = Set<String>()
        if let token { tokens.insert(token) }
        var confirmed = false
        if let token {
            var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/logout"))
            request.httpMethod = "POST"
            if let prepared = try? transport.prepare(request, deviceID: deviceID, token: token),
               let (_, response) = try? await transport.send(prepared, kind: .session) {
                confirmed = response.statusCode == 204
            }
        }
        await clearStore(ifHolding: tokens)
        return confirmed
    }
}

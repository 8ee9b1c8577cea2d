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
    /// stored one, or a new random one kept from now on. Unless `deviceBinding` is off, the
    /// login carries a proof of the device key (made now if the store has none), and a server
    /// that binds answers with a DPoP token (`TokenBundle.tokenType`).
    /// - Throws: `BatonClientError.http` with `invalid_credentials` (wrong name or password),
    ///   `account_disabled`, `too_many_attempts` (see `Retry-After`), ...; `.transport`; `.store`.
    public func login(username: String, password: String, deviceClass: DeviceClass = .mobile, deviceName: String? = nil) async throws {
        try? restoreIfNeeded()
        let (deviceID, key) = try await loginDevice()
        var body: [String: String] = ["username": username, "password": password, "device_id": deviceID,
                                      "device_class": deviceClass.rawValue]
        if let deviceName { body["device_name"] = deviceName }
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/login"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        try await completeLogin(request, deviceID: deviceID, key: key)
    }

    /// The device id and key a login uses. M2: the store's lock is held to read the device id
    /// and make the device key, and again to store the bundle (`completeLogin`), never across
    /// the network: another process sharing the store (an extension exchanging its token) does
    /// not wait for a login's round trip.
    func loginDevice() async throws(BatonClientError) -> (deviceID: String, key: DeviceKey?) {
        try await withStoreLock { () throws(BatonClientError) in
            // A store that cannot be read now (a newer format, F14; a locked Keychain) is not
            // overwritten by a login under a new device id: the login fails with its error.
            let stored: StoredCredentials?
            do throws(BatonClientError) { stored = try store.load() } catch {
                if case BatonClientError.credentialsUnavailable = error { throw error }
                stored = nil
            }
            return (stored?.deviceID ?? self.deviceID ?? environment.newID().uuidString.lowercased(), try loginKey())
        }
    }

    /// Sends a login (`request`, password or token exchange), then stores and adopts the
    /// bundle it answers, as every login does.
    func completeLogin(_ request: URLRequest, deviceID: String, key: DeviceKey?) async throws {
        let prepared = try transport.prepare(request, deviceID: deviceID, authorization: nil)
        let (data, response) = try await transport.send(prepared, kind: .session, proofKey: key)
        guard response.statusCode == 200 else {
            throw BatonClientError.http(data, response, error: ServerError.from(body: data, response: response))
        }
        let bundle = try TokenBundle.decode(data, receivedAt: configuration.now(), key: key)
        // The device id is this session's from now on, saved or not: a login tried again after
        // a failed save is the same device, which the server replaces, not another one that
        // counts against the per-kind device limit (F7: ten retries evicted the user's phone).
        adopt(deviceID: deviceID)
        do {
            try await withStoreLock { () throws(BatonClientError) in
                try persist(StoredCredentials(deviceID: deviceID, bundle: bundle))  // persisted before use
            }
        } catch {
            // A chain nobody can use (its token is in no store) is ended at once, not left
            // live on the server until it expires (F7).
            _ = await revokeOnServer(bundle, key: key)
            throw error
        }
        unsavedSuccessor = nil
        _ = apply(.loggedIn(bundle))
    }

    /// Asks the server to revoke `bundle`'s chain (`POST /v1/logout`, with `key`'s proof for a
    /// bound chain); whether it confirmed. Best effort: offline, the chain ends on its own.
    func revokeOnServer(_ bundle: TokenBundle, key: DeviceKey?) async -> Bool {
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/logout"))
        request.httpMethod = "POST"
        let proofKey = bundle.tokenType == .dpop ? key : nil
        guard let prepared = try? transport.prepare(request, deviceID: deviceID, authorization: bundle.authorization),
              let (_, response) = try? await transport.send(prepared, kind: .session, proofKey: proofKey) else { return false }
        return response.statusCode == 204
    }

    /// `body` with the store locked.
    func withStoreLock<T>(_ body: () throws(BatonClientError) -> T) async throws(BatonClientError) -> T {
        let lock = try await store.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Logs out: requests fail with `loginRequired(.loggedOut)` from now on, the app's requests
    /// in flight are cancelled, an exchange in flight is let finish, then, with the store locked,
    /// the store is read again (another process sharing it may have exchanged meanwhile) and
    /// cleared, and the server revokes the chain of the newest token: the store's, else the
    /// newest this session held.
    /// - Returns: whether the server confirmed the revocation (false offline: the local logout
    ///   happened anyway, and the chain ends on its own when its tokens expire).
    @discardableResult
    public func logout() async -> Bool {
        try? restoreIfNeeded()
        let pending = pendingExchange
        let heldChain = heldBundle?.chainID
        var newest = heldBundle
        _ = apply(.loggedOut)
        transport.cancelAppRequests()
        if let pending {
            switch await pending.value {
            case .exchanged(let successor), .adopted(let successor): newest = successor
            case .loginRequired, .failed: break
            }
        }
        if let unsaved = unsavedSuccessor?.credentials.bundle { newest = unsaved }
        unsavedSuccessor = nil
        // Under the lock: the store's head is the chain's newest token when another process
        // sharing the store exchanged after this one; clearing it here stops every sharer from
        // exchanging again. A different chain there (a newer login elsewhere) is left alone.
        if let lock = try? await store.lock() {
            if let stored = (try? store.load()) ?? nil, let head = stored.bundle,
               head.token == newest?.token || heldChain == nil || head.chainID == heldChain {
                // H5: the stored head replaces what this session knows only when it is later in
                // the chain (another process exchanged); a store lagging behind (a save that
                // failed) holds a spent token, which would revoke nothing.
                if newest?.isLater(inChainOf: head) != true { newest = head }
                try? persist(StoredCredentials(deviceID: stored.deviceID, bundle: nil))
            }
            lock.unlock()
        }
        guard let newest else { return false }
        // A bound chain's logout needs its key's proof; without the key it cannot be revoked
        // (nor used by anyone), and ends when its tokens expire.
        let proofKey = newest.tokenType == .dpop ? (try? deviceKeyIfHeld(for: newest)) ?? nil : nil
        return await revokeOnServer(newest, key: proofKey)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension BatonSession {
    /// One exchange of `old`, with the store locked for its whole length: re-read the store,
    /// exchange only if it still holds `old`, store the successor before anyone uses it.
    ///
    /// A transport failure (no answer, timeout, reset) and 5xx/429 are retried with the same
    /// token and the same `X-Device-Id` on the configuration's `exchangeSchedule`: short attempts
    /// that all end within the server's retry grace, so the server's lost-response retry (R3a)
    /// turns a repeat of an exchange whose answer was lost or stalled into a fresh successor
    /// instead of reuse. The token is never sent to exchange otherwise.
    func exchangeUnderLock(_ old: TokenBundle) async -> ExchangeOutcome {
        let lock: CredentialStoreLock
        do { lock = try await store.lock() } catch { return .failed(error) }
        defer { lock.unlock() }

        // Another process sharing the store may have exchanged, logged in or out meanwhile.
        var stored: StoredCredentials?
        do { stored = try store.load() } catch { return .failed(error) }
        if let unsaved = unsavedSuccessor, stored?.bundle?.token == unsaved.old {
            stored = unsaved.credentials  // the store is behind: what this session holds is the head
        }
        if let newer = stored?.bundle, newer.token != old.token { return .adopted(newer) }
        guard let stored, stored.bundle != nil else { return .loginRequired(.loggedOut) }

        let schedule = configuration.exchangeSchedule
        var lastError = BatonClientError.transport(code: -1, description: "no attempt")
        for attempt in 0..<schedule.attempts {
            if attempt > 0 { try? await Task.sleep(for: schedule.delays[attempt - 1]) }
            let answer: (Data, HTTPURLResponse)
            do {
                var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/exchange"))
                request.httpMethod = "POST"
                // R3a: the same token and the same device id on every attempt.
                var prepared = try transport.prepare(request, deviceID: stored.deviceID, token: old.token)
                prepared.timeoutInterval = schedule.timeout.seconds
                answer = try await transport.send(prepared, kind: .session)
            } catch {
                lastError = error
                continue
            }
            let (data, response) = answer
            let serverError = ServerError.from(body: data, response: response)
            switch response.statusCode {
            case 200:
                let successor: TokenBundle
                do { successor = try TokenBundle.decode(data, receivedAt: configuration.now()) } catch {
                    // The server consumed the token but the answer is unreadable: like a lost answer.
                    lastError = error
                    continue
                }
                let credentials = StoredCredentials(deviceID: stored.deviceID, bundle: successor)
                do { try store.save(credentials) } catch {
                    // The server committed: the old token is spent. Use the successor now and
                    // save it again at the next call; never fall back to the spent token.
                    unsavedSuccessor = (old.token, credentials)
                }
                return .exchanged(successor)
            case 401 where serverError.flatMap(LoginRequiredReason.init) != nil:
                // The server's final answer. Cleared under the same lock, so another process
                // waiting for it finds no bundle instead of exchanging the dead token again.
                try? store.save(StoredCredentials(deviceID: stored.deviceID, bundle: nil))
                return .loginRequired(LoginRequiredReason(serverError!)!)
            case 429, 500...:
                lastError = .http(data, response, error: serverError)
            default:
                return .failed(.http(data, response, error: serverError))
            }
        }
        return .failed(lastError)
    }

    /// Saves a successor the store refused earlier, if the store still holds the token it
    /// replaced (anything else there is newer news: another login or logout wins).
    func saveUnsavedSuccessor() async {
        guard let (old, credentials) = unsavedSuccessor else { return }
        guard let lock = try? await store.lock() else { return }
        defer { lock.unlock() }
        let stored: StoredCredentials?
        do { stored = try store.load() } catch { return }  // unreadable now: try at the next call
        if stored?.bundle?.token == old {
            guard (try? store.save(credentials)) != nil else { return }
        }
        unsavedSuccessor = nil
    }
}

extension Duration {
    /// The duration in seconds, for Foundation's `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

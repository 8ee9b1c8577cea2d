import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension BatonSession {
    /// One exchange of `old`, with the store locked for its whole length: re-read the store,
    /// exchange only if it still holds `old`, store the successor before anyone uses it.
    ///
    /// A transport failure (no answer, timeout, reset) and 5xx/429 are retried with the same
    /// token and the same `X-Device-Id`, a bounded number of times with doubling pauses: the
    /// server's lost-response retry (R3a) turns a repeat of an exchange whose answer was lost
    /// into a fresh successor instead of reuse. The token is never sent to exchange otherwise.
    func exchangeUnderLock(_ old: TokenBundle) async -> ExchangeOutcome {
        let lock: CredentialStoreLock
        do { lock = try await store.lock() } catch { return .failed(error) }
        defer { lock.unlock() }

        // Another process sharing the store may have exchanged, logged in or out meanwhile.
        let stored: StoredCredentials?
        do { stored = try store.load() } catch { return .failed(error) }
        if let newer = stored?.bundle, newer.token != old.token { return .adopted(newer) }
        guard let stored, stored.bundle != nil else { return .loginRequired(.loggedOut) }

        var delay = configuration.exchangeRetryDelay
        var lastError = BatonClientError.transport(code: -1, description: "no attempt")
        for attempt in 1...configuration.exchangeAttempts {
            if attempt > 1 {
                try? await Task.sleep(for: delay)
                delay *= 2
            }
            let answer: (Data, HTTPURLResponse)
            do {
                var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/exchange"))
                request.httpMethod = "POST"
                // R3a: the same token and the same device id on every attempt.
                answer = try await transport.send(transport.prepare(request, deviceID: stored.deviceID, token: old.token), kind: .session)
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
                do { try store.save(StoredCredentials(deviceID: stored.deviceID, bundle: successor)) } catch { return .failed(error) }
                return .exchanged(successor)
            case 401 where serverError.flatMap(LoginRequiredReason.init) != nil:
                // The server's final answer. Cleared under the same lock, so another process
                // waiting for it finds no bundle instead of exchanging the dead token again.
                try? store.save(StoredCredentials(deviceID: stored.deviceID, bundle: nil))
                return .loginRequired(LoginRequiredReason(serverError!)!)
            case 429, 500...:
                lastError = .http(status: response.statusCode, error: serverError, body: data)
            default:
                return .failed(.http(status: response.statusCode, error: serverError, body: data))
            }
        }
        return .failed(lastError)
    }
}

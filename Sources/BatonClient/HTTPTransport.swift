import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The network layer under the session: resolves URLs against the base URL, adds the common
/// headers, keeps the token within the base URL's origin (redirects included), applies the
/// timeout and the concurrency bound, and can cancel every app request in
/// flight (at logout). Each request is one `URLSessionDataTask`, so cancelling the calling Swift
/// task cancels the HTTP request too; or, with a simulated network, one call of the
/// environment's `RoundTrip` (`ClientEnvironment.Network`).
final class HTTPTransport: Sendable {
    /// Whether a request is one of the app's (bounded, cancelled at logout) or the session's own.
    enum Kind: Sendable { case app, session }

    private let configuration: BatonConfiguration
    /// Nil only with a simulated network that was given none: a URLSession holds a libcurl
    /// multi handle and its socket pair on Linux, and a simulation makes thousands of sessions.
    private let urlSession: URLSession?
    private let limiter: ConcurrencyLimiter
    private let inFlight = InFlightRequests()
    /// The server's latest DPoP nonce, put into every proof.
    let nonces = DPoPNonces()
    private let origin: Origin?
    private let ownsSession: Bool
    /// The network, the request ids and the proofs' randomness.
    private let environment: ClientEnvironment
    /// URLRequest's default timeout: a request still carrying it gets the configuration's.
    private static let defaultTimeout = URLRequest(url: URL(fileURLWithPath: "/")).timeoutInterval

    /// A transport for `configuration`: on `urlSession` when the app brings its own (pinning,
    /// delegates, protocol classes; the app keeps it and its settings), else on an ephemeral
    /// URLSession of its own (no cookies, no cache). With a simulated network in `environment`,
    /// the app's URLSession is kept (and checked) but never sent on, and none is made.
    init(configuration: BatonConfiguration, urlSession: URLSession? = nil, environment: ClientEnvironment = .live) {
        self.configuration = configuration
        self.environment = environment
        origin = Origin(configuration.baseURL)
        if let urlSession {
            self.urlSession = urlSession
            ownsSession = false
        } else if case .roundTrip = environment.network {
            self.urlSession = nil
            ownsSession = false
        } else {
            let sessionConfiguration = URLSessionConfiguration.ephemeral
            // The idle timeout between bytes; no cap on the whole transfer (a large upload
            // may take minutes), the request's own `timeoutInterval` applies per request.
            sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
            sessionConfiguration.httpMaximumConnectionsPerHost = configuration.maxConcurrentRequests + 2
            sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
            sessionConfiguration.urlCache = nil
            sessionConfiguration.httpCookieStorage = nil
            sessionConfiguration.httpShouldSetCookies = false
            self.urlSession = URLSession(configuration: sessionConfiguration)
            ownsSession = true
        }
        limiter = ConcurrencyLimiter(limit: configuration.maxConcurrentRequests)
        unusableSession = self.urlSession.flatMap(Self.refusal(of:))
    }

    deinit { if ownsSession { urlSession?.invalidateAndCancel() } }

    /// Why the app's URLSession cannot carry the session's requests (a background session),
    /// or nil: every request then fails with it instead of crashing (F12).
    let unusableSession: BatonClientError?

    /// The refusal for `session`, or nil when it can carry completion-handler tasks. A
    /// background session (one with an identifier) cannot: Apple raises an exception at the
    /// first such task (F12: the app crashed on its first request).
    static func refusal(of session: URLSession) -> BatonClientError? {
        refusal(identifier: session.configuration.identifier)
    }

    /// The refusal for a URLSession whose configuration has `identifier` (only background
    /// configurations have one); pure, for the platforms that cannot make one (Linux).
    static func refusal(identifier: String?) -> BatonClientError? {
        guard let identifier else { return nil }
        return .invalidRequest("the URLSession given as urlSession: is a background session (identifier \(identifier)), which runs no "
            + "completion-handler tasks: pass a default or ephemeral URLSession, or none (docs/client.md, \"Background refresh\")")
    }

    /// `request` with the base URL applied, the common headers, a User-Agent and a timeout
    /// unless the request has its own, and, for the base URL's origin only, the device id and
    /// the `Authorization` value (`Bearer …` or `DPoP …`: `TokenBundle.authorization`).
    /// - Throws: `.invalidRequest` when the URL cannot be resolved.
    func prepare(_ request: URLRequest, deviceID: String?, authorization: String?) throws(BatonClientError) -> URLRequest {
        var prepared = request
        guard let url = request.url else { throw .invalidRequest("the request has no URL") }
        if url.scheme == nil {
            guard let resolved = URL(string: url.relativeString, relativeTo: configuration.baseURL)?.absoluteURL else {
                throw .invalidRequest("cannot resolve \(url.relativeString) against \(configuration.baseURL)")
            }
            prepared.url = resolved
        }
        for (name, value) in configuration.headers where prepared.value(forHTTPHeaderField: name) == nil {
            prepared.setValue(value, forHTTPHeaderField: name)
        }
        if prepared.value(forHTTPHeaderField: "User-Agent") == nil {
            prepared.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
        }
        if prepared.timeoutInterval == Self.defaultTimeout { prepared.timeoutInterval = configuration.requestTimeout }
        // The device id and the token go to the base URL's origin only (scheme, host, port):
        // never to a presigned upload URL, a CDN or any other host the app sends to.
        guard let origin, origin.contains(prepared.url) else { return prepared }
        if let deviceID { prepared.setValue(deviceID, forHTTPHeaderField: "X-Device-Id") }
        if let authorization { prepared.setValue(authorization, forHTTPHeaderField: "Authorization") }
        return prepared
    }

    /// How many logouts cancelled the app's requests so far: read it when the request gets its
    /// token, and pass it to `send`, so that a logout in between cancels the request too.
    var epoch: Int { inFlight.epoch }

    /// Sends a prepared request and returns the answer, whatever its status. With `proofKey`,
    /// the request carries a fresh DPoP proof for its method and URL (base URL's origin only),
    /// and a `use_dpop_nonce` answer is sent once more with a new proof carrying the server's
    /// nonce (`DPoPNonces`). An app request whose `epoch` is no longer current (a logout
    /// happened since it got its token) never goes out: the check and the registration for
    /// cancellation are one step.
    /// - Throws: `.transport` without an answer, `.cancelled` when cancelled, `.deviceKey`
    ///   when the key cannot sign.
    func send(_ request: URLRequest, kind: Kind, epoch: Int? = nil, proofKey: DeviceKey?) async throws(BatonClientError) -> (Data, HTTPURLResponse) {
        guard let proofKey, let origin, origin.contains(request.url) else { return try await sendOnce(request, kind: kind, epoch: epoch) }
        var signed = request
        // Sends with a fresh proof carrying the latest nonce; remembers the answer's nonce.
        func sendProved() async throws(BatonClientError) -> (Data, HTTPURLResponse) {
            signed.setValue(try proof(for: request, key: proofKey, nonce: nonces.latest), forHTTPHeaderField: "DPoP")
            let answer = try await sendOnce(signed, kind: kind, epoch: epoch, proofKey: proofKey)
            nonces.remember(answer.1)
            return answer
        }
        let nonce = nonces.latest
        var answer = try await sendProved()
        // A body stream is read once: such a request is not sent again.
        guard request.httpBodyStream == nil else { return answer }
        // RFC 9449 §8: once more with the nonce the server asked for.
        if DPoPNonces.isNonceChallenge(answer.1, body: answer.0, badRequestCounts: kind != .app) && nonces.latest != nonce {
            answer = try await sendProved()
        }
        // And once more after a refused proof, whether or not a nonce round came first: a
        // transport-level resend (libcurl, under FoundationNetworking, resends a request whose
        // reused connection died before any answer byte) replays the proof, which the server
        // refuses as seen before. A refusal changes nothing on the server, and the gateway
        // answers it before the app sees the request.
        if Self.isRefusedProof(answer.1, body: answer.0) {
            answer = try await sendProved()
        }
        return answer
    }

    /// Whether the answer is Baton's refusal of the request's proof (401 `invalid_dpop_proof`
    /// with Baton's mark: an app's own 401 never makes the session resend its request).
    static func isRefusedProof(_ response: HTTPURLResponse, body: Data) -> Bool {
        BatonRefusal.isBatons(response) && ServerError.from(body: body, response: response)?.code == "invalid_dpop_proof"
    }

    /// A proof for `request` (its method and URL, and its `DPoP` token if it presents one).
    func proof(for request: URLRequest, key: DeviceKey, nonce: String?) throws(BatonClientError) -> String {
        guard let url = request.url else { throw .invalidRequest("the request has no URL") }
        let authorization = request.value(forHTTPHeaderField: "Authorization")
        let token = authorization.flatMap { $0.hasPrefix("DPoP ") ? String($0.dropFirst(5)) : nil }
        return try DeviceProof.make(key: key, method: request.httpMethod ?? "GET", url: url, token: token, nonce: nonce,
                                    now: configuration.now(), randomBytes: environment.randomBytes)
    }

    /// What makes a fresh proof for a redirect of a request proved by `key` (nil: no key).
    func reprover(_ key: DeviceKey?) -> (@Sendable (URLRequest) -> String?)? {
        guard let key else { return nil }
        // Weak: the closure lives in a task's delegate, and the last reference to the
        // transport must never be dropped there (its deinit invalidates the URLSession).
        return { [weak self] redirect in
            guard let self else { return nil }
            return try? self.proof(for: redirect, key: key, nonce: self.nonces.latest)
        }
    }

    /// The redirect rule of `RedirectGuard` for this transport's origin, proving with `key`.
    func redirected(_ request: URLRequest, proofKey key: DeviceKey?) -> URLRequest {
        RedirectGuard.redirected(request, within: origin, reprove: reprover(key))
    }

    /// `send` of one prepared request as it is.
    private func sendOnce(_ request: URLRequest, kind: Kind, epoch: Int?,
                          proofKey: DeviceKey? = nil) async throws(BatonClientError) -> (Data, HTTPURLResponse) {
        if let unusableSession, case .urlSession = environment.network { throw unusableSession }
        let epoch = epoch ?? inFlight.epoch
        if kind == .app {
            // A request still queued for a permit when the user logs out is cancelled too.
            try await limiter.acquire()
            guard inFlight.epoch == epoch else {
                limiter.release()
                throw .cancelled
            }
        }
        defer { if kind == .app { limiter.release() } }
        let id = environment.newID()
        let result: Result<(Data, HTTPURLResponse), BatonClientError>
        switch environment.network {
        case .urlSession:
            result = await sendOnURLSession(request, id: id, kind: kind, epoch: epoch, proofKey: proofKey)
        case .roundTrip(let roundTrip):
            result = await send(request, through: roundTrip, id: id, kind: kind, epoch: epoch)
        }
        inFlight.remove(id: id)
        return try result.value()
    }

    /// One URLSession data task for `request`, with the redirect guard, registered in flight as
    /// `id` (cancelled with the calling task, and at logout for an app request of `epoch`).
    private func sendOnURLSession(_ request: URLRequest, id: UUID, kind: Kind, epoch: Int,
                                  proofKey: DeviceKey?) async -> Result<(Data, HTTPURLResponse), BatonClientError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard let urlSession else {
                    // Not reached: a transport without a URLSession has a simulated network.
                    continuation.resume(returning: .failure(.invalidRequest("no URLSession to send on")))
                    return
                }
                let task = urlSession.dataTask(with: request) { data, response, error in
                    if let error {
                        let code = (error as? URLError)?.code
                        continuation.resume(returning: .failure(code == .cancelled ? .cancelled
                            : .transport(code: code?.rawValue ?? -1, description: error.localizedDescription)))
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: .success((data ?? Data(), response)))
                    } else {
                        continuation.resume(returning: .failure(.invalidResponse("not an HTTP response")))
                    }
                }
                task.delegate = RedirectGuard(origin: origin, reprove: reprover(proofKey))
                guard inFlight.insert(task, id: id, cancellableAtLogout: kind == .app, epoch: epoch) else {
                    continuation.resume(returning: .failure(.cancelled))  // logged out meanwhile: never sent
                    return
                }
                task.resume()
            }
        } onCancel: {
            inFlight.cancel(id: id)
        }
    }

    /// `request` through the environment's `roundTrip`, registered in flight as `id` exactly as
    /// a data task is: it never starts when a logout came after `epoch` (an app request) or the
    /// calling task was cancelled first, and it is cancelled with the calling task or at logout.
    private func send(_ request: URLRequest, through roundTrip: @escaping ClientEnvironment.RoundTrip, id: UUID, kind: Kind,
                      epoch: Int) async -> Result<(Data, HTTPURLResponse), BatonClientError> {
        let trip = RoundTripTask()
        return await withTaskCancellationHandler {
            guard inFlight.insert(trip, id: id, cancellableAtLogout: kind == .app, epoch: epoch) else {
                return .failure(.cancelled)  // logged out meanwhile: never sent
            }
            return await trip.run { await roundTrip(request) }
        } onCancel: {
            inFlight.cancel(id: id)
        }
    }

    /// Cancels every app request in flight (the session's own exchange is left to finish).
    func cancelAppRequests() {
        inFlight.cancelAll()
    }
}

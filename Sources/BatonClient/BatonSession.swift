import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app's session with Baton: holds the token bundle and the device id, authorizes the app's
/// requests, exchanges the token when it expires (once, however many requests need it, across
/// processes sharing the store), replays what the gateway refused for an expired or superseded
/// token, and tells the UI when the user must log in again.
///
/// All state is one `SessionState` value owned by this actor; the decisions are `SessionRules`,
/// a pure function. An exchange in flight is a case of the state holding its `Task`, set before
/// the first suspension; every request that needs a token awaits that one task.
public actor BatonSession {
    /// Session events for the UI (log in again, logged out, ...). Each access is a stream of
    /// its own (a view model and a logger can both listen): it gets every event published after
    /// it subscribed, and the first subscriber also gets the newest 16 published while nobody
    /// listened.
    public nonisolated var events: AsyncStream<SessionEvent> { eventBroadcast.subscribe() }
    /// How this session talks to the gateway.
    public nonisolated let configuration: BatonConfiguration

    /// The app's store, seen through `StampKeepingStore` (it keeps the last installation stamp read).
    let store: StampKeepingStore
    nonisolated let transport: HTTPTransport
    /// The clocks, sleep, ids, randomness and network this session runs on (`.live` in apps).
    nonisolated let environment: ClientEnvironment
    private nonisolated let eventBroadcast: EventBroadcast<SessionEvent>
    private let rules: SessionRules
    private var state: SessionState<Task<ExchangeOutcome, Never>> = .uninitialized
    /// Sent as `device_id` and `X-Device-Id`; read from the store, or made at the first login.
    private(set) var deviceID: String?
    /// Why the store could not be read at the last try, while it is temporarily unavailable.
    private var unavailableStore: String?
    /// Whether a "protected data available" notification is awaited (M9).
    private var isWatchingForUnlock = false
    /// A successor the server issued that the store refused to save. It is never presented
    /// while unsaved: the session keeps `old` (the token it replaced, still in the store) and
    /// saves this at its next call, then uses it. Should the process end first, the relaunch
    /// exchanges `old` again and the server's lost-response retry (R3a) issues a fresh successor
    /// (the unsaved one was never presented, so the server still recognises the retry).
    var unsavedSuccessor: (old: String, credentials: StoredCredentials)?
    /// The highest exchange attempt number (R3b) this session sent, or learnt from the server,
    /// for a token (its chain and generation): the next attempt goes above it even when the
    /// store could not keep the count.
    var lastAttempt: (chainID: String, generation: Int, number: Int)?
    /// How this session tells a dead claim owner from a live one (`environment.claimLiveness`).
    nonisolated var claimLiveness: ClaimOwnerLiveness { environment.claimLiveness }
    /// This session's name in exchange claims (`ExchangeClaim.owner`).
    @_spi(Simulation) public nonisolated let sessionID: String
    /// The step-up (password prompt and confirmation) in flight, which every challenged request waits for.
    var stepUpInFlight: Task<Void, any Error>?
    /// When the last step-up succeeded.
    var lastStepUp: ContinuousClock.Instant?
    /// The subscribers of `statusUpdates()`, and the status they saw last.
    var statusSubscribers: [UUID: AsyncStream<SessionStatus>.Continuation] = [:]
    var publishedStatus: SessionStatus?
    /// The device key (DPoP), once read from the store or made at login.
    var cachedDeviceKey: DeviceKey?
    /// How long this network takes to answer an exchange: the attempts' timeout (`ExchangeRoundTrips`).
    var exchangeRoundTrips = ExchangeRoundTrips()
    /// The installation marker this session stamps its saves with (`InstallationMarker`).
    nonisolated let installationMarker: InstallationMarker
    /// When the user last confirmed through `configuration.biometrics`.
    var biometricConfirmedAt: ContinuousClock.Instant?
    /// The biometric prompt being shown, which every request waiting shares.
    var biometricPrompt: Task<BiometricOutcome, Never>?
    /// The marker's stamp (`InstallationMarker.Stamp`), once read or made.
    var installationStamp: String?
    /// Callers waiting for the exchange in flight now (tests await it).
    var exchangeWaiters = 0

    /// How often one request is replayed after a 401 that the session could fix (an exchange,
    /// or a newer token held already).
    static let maxReplays = 2

    /// A session over `store`. Nothing is read or sent until the first call.
    ///
    /// With `urlSession`, every request goes through the app's own URLSession (certificate
    /// pinning, delegates, protocol classes, proxies); the session does not change or invalidate
    /// it. Without, the session makes an ephemeral one of its own (no cookies, no cache).
    public init(configuration: BatonConfiguration, store: any CredentialStore, urlSession: URLSession? = nil) {
        self.init(configuration: configuration, store: store, urlSession: urlSession, environment: .live)
        if let refusal = transport.unusableSession {
            DiagnosticSink(handler: configuration.diagnostics).record(.error, "unusable URLSession; every request will fail", ["error": refusal.diagnosticText])
        }
    }

    /// Checks, at configuration time, that `urlSession` can carry the session's requests: a
    /// background URLSession cannot (it runs no completion-handler tasks, F12). A session made
    /// with such a URLSession fails every request with the same error rather than crash.
    /// - Throws: `BatonClientError.invalidRequest` naming the background session.
    public static func validate(urlSession: URLSession) throws(BatonClientError) {
        if let refusal = HTTPTransport.refusal(of: urlSession) { throw refusal }
    }

    /// A session over `store` that reads its clocks, sleeps, ids, randomness and network from
    /// `environment` (a deterministic simulation's; apps get `.live` through the public init).
    /// With a simulated network, `urlSession` is never sent on.
    @_spi(Simulation) public init(configuration: BatonConfiguration, store: any CredentialStore, urlSession: URLSession? = nil,
                 environment: ClientEnvironment) {
        self.configuration = configuration
        self.store = StampKeepingStore(store)
        self.environment = environment
        transport = HTTPTransport(configuration: configuration, urlSession: urlSession, environment: environment)
        rules = SessionRules(expiryMargin: configuration.expiryMargin)
        eventBroadcast = EventBroadcast(backlogLimit: 16, newID: environment.newID)
        sessionID = environment.newID().uuidString
        installationMarker = InstallationMarker(configuration.installationMarker, isAppExtension: Self.isAppExtension)
        LiveSessions.shared.insert(sessionID)
    }

    deinit {
        LiveSessions.shared.remove(sessionID)
        eventBroadcast.finish()
        for subscriber in statusSubscribers.values { subscriber.finish() }
    }

    /// Where the session stands now.
    public var status: SessionStatus {
        switch state {
        case .uninitialized: unavailableStore == nil ? .loggedOut(.notLoggedIn) : .credentialsUnavailable
        case .loggedOut(let reason): .loggedOut(reason)
        case .active(let bundle), .exchanging(let bundle, _): .loggedIn(chainID: bundle.chainID, generation: bundle.generation)
        }
    }

    /// Loads the stored credentials (call it at launch). With `exchangeNow`, the held token is
    /// exchanged at once, as banking apps do on start; requests made meanwhile wait for that
    /// same exchange instead of racing it. Cancelling the calling task returns at once (F5:
    /// it used to wait for the whole exchange); the exchange goes on for everyone else.
    @discardableResult
    public func restore(exchangeNow: Bool = false) async -> SessionStatus {
        try? restoreIfNeeded()
        if exchangeNow {
            for action in apply(.exchangeRequested) {
                if case .wait(let exchange) = action { _ = await Self.outcome(of: exchange) }
            }
        }
        return status
    }

    /// Sends one of the app's requests through the gateway with the session's token: exchanges
    /// first if the token has expired, and replays once after a 401 `token_expired` (after one
    /// exchange) or `token_superseded` (with the newer token already held).
    ///
    /// A relative URL (`/api/orders`) is resolved against the base URL. The common headers,
    /// `X-Device-Id`, `User-Agent` and `Authorization` are set here.
    /// - Returns: the body and response of any status below 400.
    /// - Throws: `BatonClientError`: `.loginRequired` when the session is over,
    ///   `.stepUpRequired` when the operation needs the password again, `.http` for other
    ///   answers of 400 and above, `.transport`, `.cancelled` (the user logged out),
    ///   `.credentialsUnavailable` (the Keychain is locked: try later, no login screen);
    ///   `CancellationError` when the calling task is cancelled, at once, even while it waits
    ///   for an exchange (which goes on for the others).
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        do {
            return try await sendWithSession(request)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
    }

    /// `send` without the translation of the caller's cancellation.
    private func sendWithSession(_ request: URLRequest) async throws(BatonClientError) -> (Data, HTTPURLResponse) {
        try restoreIfNeeded()
        await saveUnsavedSuccessor()
        adoptLoginFromStore()
        try await confirmUserIfNeeded()
        var input = SessionInput.tokenNeeded(now: configuration.now())
        var replays = 0
        while true {
            let bundle = try await bundle(for: input)
            let data: Data, response: HTTPURLResponse
            do {
                let key = try await proofKey(for: bundle)
                let epoch = transport.epoch  // on the actor, as logout: no logout between the two
                let prepared = try transport.prepare(request, deviceID: deviceID, authorization: bundle.authorization)
                (data, response) = try await transport.send(prepared, kind: .app, epoch: epoch, proofKey: key)
            } catch .deviceKey(let why) {
                try await endForUnusableKey(of: bundle, why)  // reading or signing: the key is there but broken (F11)
            }
            guard response.statusCode >= 400 else { return (data, response) }
            let error = ServerError.from(body: data, response: response)
            // Only Baton's 401s concern the session; the app's own go back to it (F3).
            let batons = BatonRefusal.isBatons(response)
            if batons, error?.code == "invalid_dpop_proof", deviceKeyIsGone(for: bundle) {
                // A refused proof ends nothing by itself (the token alone is harmless); a key
                // that is gone does: the bound chain cannot be used any more.
                _ = try await proofKey(for: bundle)
            }
            if batons, let error, error.code == "insufficient_user_authentication" {
                // RFC 9470: not a session matter. Neither exchange nor log out; the app confirms.
                throw .stepUpRequired(maxAge: error.maxAge)
            }
            guard batons, let error, let rejection = Rejection(error), replays < Self.maxReplays else {
                throw .http(data, response, error: error)
            }
            if request.httpBodyStream != nil, rejection == .expired || rejection == .superseded {
                // A stream is read once: the replay cannot carry the body. The session has done
                // its part (exchanged, or holds the newer token); the app sends a new request.
                _ = try? await self.bundle(for: .rejected(token: bundle.token, rejection))
                throw .invalidRequest("the gateway refused the token (\(error.code)) and a request with an httpBodyStream "
                    + "cannot be sent twice; send it again (the session holds a valid token now), or use httpBody or a file upload")
            }
            replays += 1
            input = .rejected(token: bundle.token, rejection)
        }
    }

    /// Runs the rules from `input` until they say which bundle to send with, waiting for the
    /// in-flight exchange where they say so.
    func bundle(for first: SessionInput) async throws(BatonClientError) -> TokenBundle {
        var input = first
        while true {
            var next: SessionInput?
            for action in apply(input) {
                switch action {
                case .send(let bundle): return bundle
                case .fail(let error): throw error
                case .publish: break  // done by apply
                case .clearStore(let token): await clearStore(ifHolding: [token])
                case .wait(let exchange):
                    // A cancelled caller leaves at once; the exchange is shared and goes on for
                    // everyone else (it is a Task of its own, not a child of this caller).
                    exchangeWaiters += 1
                    let outcome = await Self.outcome(of: exchange)
                    exchangeWaiters -= 1
                    guard let outcome else { throw .cancelled }
                    switch outcome {
                    case .exchanged, .adopted: next = .exchangeAwaited
                    case .loginRequired(let reason): throw .loginRequired(reason)
                    case .failed(let error): throw error
                    }
                }
            }
            guard let next else { throw .invalidResponse("no decision") }  // the rules always end in send, fail or wait
            input = next
        }
    }

    /// Applies the rules to the state and publishes their events. The state changes here and
    /// nowhere else, synchronously: no caller can see a half-made decision.
    func apply(_ input: SessionInput) -> [SessionAction<Task<ExchangeOutcome, Never>>] {
        let before = state.bundle
        let transition = rules.decide(state, input) { bundle in
            Task { await self.runExchange(of: bundle) }
        }
        state = transition.state
        publishStatus()
        for case .publish(let event) in transition.actions {
            if case .loginRequired(let reason) = event {
                diagnostics.record(.error, "session ended: the user must log in again",
                                   ["reason": reason.code, "chain": before?.chainID ?? "-", "generation": before.map { "\($0.generation)" } ?? "-"])
            }
            eventBroadcast.publish(event)
        }
        return transition.actions
    }

    /// Where this session's diagnostics go.
    nonisolated var diagnostics: DiagnosticSink { DiagnosticSink(handler: configuration.diagnostics) }

    /// Exchanges `old`, then records the outcome in the state (if the state still waits for it).
    private func runExchange(of old: TokenBundle) async -> ExchangeOutcome {
        let activity = BackgroundActivity(reason: "Baton token exchange")
        defer { activity.end() }
        let outcome = await exchangeCoordinated(old)
        let where_ = ["chain": old.chainID, "generation": "\(old.generation)"]
        switch outcome {
        case .exchanged: break
        case .adopted(let head):
            diagnostics.record(.info, "exchange: adopted the token another process stored", where_.merging(["to": "\(head.generation)"]) { $1 })
        case .failed(let error):
            diagnostics.record(.notice, "exchange failed; the session keeps its token", where_.merging(["error": error.diagnosticText]) { $1 })
        case .loginRequired: break  // recorded when the event is published
        }
        _ = apply(.exchangeFinished(old: old.token, outcome))
        return outcome
    }

    /// Reads the store once, on first use, and again at each call while it is unavailable.
    /// - Throws: `.credentialsUnavailable` while the store cannot be read now (a locked Keychain):
    ///   the state stays `uninitialized`, so nothing is logged out and the next call reads again.
    func restoreIfNeeded() throws(BatonClientError) {
        guard case .uninitialized = state else { return }
        let stored: StoredCredentials?
        do {
            stored = try store.load()
        } catch .credentialsUnavailable(let why) {
            diagnostics.record(.info, "store unavailable now; not logged out", ["error": why])
            if !isWatchingForUnlock {
                // Re-armed at each failed read: the Keychain may still refuse right after the
                // notification, and then the next unlock must be caught too (M9).
                isWatchingForUnlock = true
                ProtectedDataWatch.once { [weak self] in await self?.protectedDataBecameAvailable() }
            }
            unavailableStore = why
            publishStatus()
            throw .credentialsUnavailable(why)
        } catch {
            diagnostics.record(.error, "store unreadable; treated as logged out", ["error": error.diagnosticText])
            stored = nil  // a broken store is a logged-out user, never a crash
        }
        unavailableStore = nil
        if deviceID == nil { deviceID = stored?.deviceID }
        _ = apply(.restored(stored?.bundle))
    }

    /// M9: the device was unlocked (protected data available): a store that was unavailable is
    /// read again, so `status` and `statusUpdates()` leave `.credentialsUnavailable` without
    /// waiting for the app's next call.
    func protectedDataBecameAvailable() {
        isWatchingForUnlock = false
        guard unavailableStore != nil else { return }
        try? restoreIfNeeded()
    }

    /// A logged-out session sharing its store with another process (an app and its extension)
    /// takes up a login made there meanwhile, instead of asking the user to log in twice.
    func adoptLoginFromStore() {
        guard case .loggedOut = state, let stored = (try? store.load()) ?? nil, let bundle = stored.bundle else { return }
        deviceID = stored.deviceID
        _ = apply(.loggedIn(bundle))
    }

    /// The exchange's outcome, or nil as soon as the calling task is cancelled (the exchange
    /// itself is not cancelled).
    static func outcome(of exchange: Task<ExchangeOutcome, Never>) async -> ExchangeOutcome? {
        await outcome(of: exchange, within: nil, sleep: { _ in })
    }

    /// `outcome(of:)`, or nil once `limit` has passed on `sleep`'s clock (the exchange goes on).
    static func outcome(of exchange: Task<ExchangeOutcome, Never>, within limit: Duration?,
                        sleep: @escaping @Sendable (Duration) async throws -> Void) async -> ExchangeOutcome? {
        let waiter = OneShot<ExchangeOutcome?>()
        let timer = limit.map { limit in Task { if (try? await sleep(limit)) != nil { waiter.fulfil(nil) } } }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await waiter.wait {
                Task { waiter.fulfil(await exchange.value) }
            }
        } onCancel: {
            waiter.fulfil(nil)
        }
    }

    /// The bundle held, if any.
    var heldBundle: TokenBundle? { state.bundle }

    /// The in-flight exchange, if any.
    var pendingExchange: Task<ExchangeOutcome, Never>? {
        if case .exchanging(_, let exchange) = state { return exchange }
        return nil
    }

    /// Clears the stored bundle if the store still holds one of `tokens` (another process may
    /// have stored a newer one, which must survive). Best effort: the state is logged out already.
    func clearStore(ifHolding tokens: Set<String>) async {
        guard let lock = try? await store.lock() else { return }
        defer { lock.unlock() }
        guard let stored = (try? store.load()) ?? nil, let token = stored.bundle?.token, tokens.contains(token) else { return }
        try? persist(StoredCredentials(deviceID: stored.deviceID, bundle: nil))
    }

    /// Remembers the device id a login used.
    func adopt(deviceID: String) { self.deviceID = deviceID }
}

import BatonCore
import BatonHTTP
import BatonIdentity
import BatonStorage

/// The `/v1` API and the operational endpoints, as an `HTTPResponder`. Callable without
/// sockets: `respond(to:from:)` is the whole request-to-response path.
package final class API: HTTPResponder {
    /// Options the server passes in.
    package struct Options: Sendable {
        /// Networks whose X-Forwarded-For / X-Real-IP are believed.
        package var trustedProxies: [CIDR] = [CIDR("127.0.0.1/32")!, CIDR("::1/128")!]
        /// Write one JSON line per request to stdout.
        package var accessLog = true
        /// Write one JSON line per committed revocation, reuse, fork or refused proof to stdout
        /// (`SecurityLog`), whatever `accessLog` says.
        package var securityLog = true
        /// How recent a chain's authentication must be to sign sessions out (RFC 9470 `max_age`).
        package var signOutMaxAge: Duration = .seconds(300)
        /// More Prometheus text for /metrics (the webhook deliverer's), appended as given.
        package var moreMetrics: (@Sendable () -> String)?
        /// Device binding (RFC 9449 DPoP): `--dpop`, the proof checker, `--public-url`.
        package var dpop = DPoPOptions()
        /// `--introspection-client`: the resource servers allowed to call `/v1/introspect` and
        /// `/v1/revoke`; none: both answer 401 invalid_client to everyone.
        package var introspectionClients: [IntrospectionClient] = []
        /// `--authz-step-up`: the original paths `/v1/authz` asks a recent authentication for.
        package var authzStepUp: [StepUpPath] = []
        /// The identity providers' keys as this process caches them (`/v1/token-exchange`).
        package var identityKeys = KeySetCache()
        package init() {}
    }

    let store: any LineageStore
    private let signOutMaxAge: Duration
    private let clientAddress: ClientAddress
    private let metrics = Metrics()
    /// Request lines; nil with `accessLog` off.
    private let log: AccessLog?
    /// The buffered stdout writer both logs share.
    private let output: AccessLog
    /// What made the server answer 503 `unavailable` (always on: an operator's event).
    private let unavailable: UnavailableLog
    private let moreMetrics: (@Sendable () -> String)?
    let gate: DPoPGate
    let clients: ClientAuthenticator
    let authzStepUp: [StepUpPath]
    let identityKeys: KeySetCache
    let identityIssuers = IssuerSettingsCache()

    package init(store: any LineageStore, options: Options = Options()) {
        self.store = store
        self.signOutMaxAge = options.signOutMaxAge
        self.moreMetrics = options.moreMetrics
        self.clientAddress = ClientAddress(trustedProxies: options.trustedProxies)
        self.gate = DPoPGate(options: options.dpop, clientAddress: clientAddress)
        self.clients = ClientAuthenticator(clients: options.introspectionClients)
        self.authzStepUp = options.authzStepUp
        self.identityKeys = options.identityKeys
        let output = AccessLog()
        self.log = options.accessLog ? output : nil
        self.output = output
        self.unavailable = UnavailableLog(output: output)
        if options.securityLog {
            store.observeCommits { events in
                let now = SystemClock().now()
                for event in events {
                    if let line = SecurityLog.line(for: event, at: now) { output.append(line: line) }
                }
            }
        }
    }

    /// Flushes the access and security logs (call at shutdown).
    package func close() { output.close() }

    /// The routes: path → (methods, handler). HEAD is served by the GET handler.
    enum Route: String, CaseIterable {
        case login = "/v1/login", exchange = "/v1/exchange", verify = "/v1/verify", logout = "/v1/logout"
        /// Envoy ext_authz (HTTP mode): `/v1/authz` followed by the original path, any method.
        case authz = "/v1/authz"
        case introspect = "/v1/introspect", revoke = "/v1/revoke", metadata = "/.well-known/oauth-authorization-server"
        case confirm = "/v1/confirm", password = "/v1/password"
        /// RFC 8693 token exchange of an identity provider's token for a new chain (docs/identity.md).
        case tokenExchange = "/v1/token-exchange"
        case sessions = "/v1/sessions", revokeOtherSessions = "/v1/sessions/revoke-others", session = "/v1/sessions/{chain_id}"
        case healthz = "/healthz", readyz = "/readyz", metrics = "/metrics"

        /// Each route's path as bytes, made once: `rawValue` builds a String on every call.
        private static let paths: [(bytes: [UInt8], route: Route)] = allCases.map { (Array($0.rawValue.utf8), $0) }

        /// The route whose path is exactly `path`, compared as bytes (every request looks it up),
        /// or `session` for `/v1/sessions/` and one more segment.
        static func find(_ path: Substring) -> Route? {
            let count = path.utf8.count
            if let route = paths.first(where: { $0.bytes.count == count && $0.bytes.elementsEqual(path.utf8) })?.route {
                return route
            }
            // Every path under the prefix, whatever it holds: AuthzTarget refuses the odd ones.
            if path.utf8.starts(with: "/v1/authz/".utf8) { return .authz }
            return SessionPath.chainSegment(of: path) != nil ? .session : nil
        }

        /// The routes that take a token or a password, and record the caller in the audit trail.
        var readsCredentials: Bool {
            switch self {
            case .login, .exchange, .verify, .authz, .logout, .confirm, .password, .sessions, .revokeOtherSessions, .session: true
            case .introspect, .revoke, .tokenExchange: true
            case .healthz, .readyz, .metrics, .metadata: false
            }
        }

        var allowed: [String] {
            switch self {
            case .login, .exchange, .logout, .confirm, .password, .revokeOtherSessions, .introspect, .revoke, .tokenExchange: ["POST"]
            case .verify, .sessions, .healthz, .readyz, .metrics, .metadata: ["GET", "HEAD"]
            case .session: ["DELETE"]
            case .authz: []  // any method: the original request's
            }
        }

        /// Whether `method` is served here (`/v1/authz` takes the original request's, any).
        func accepts(_ method: String) -> Bool { self == .authz || allowed.contains(method) }
    }

    /// What a handler returns: the response, the chain it concerned and the error code it
    /// answered (for the access log).
    struct Outcome {
        var response: HTTPResponse
        var chainID: ChainID?
        var error: ErrorCode?
        /// Set instead of an answer on an event loop whose memory could not answer a verify:
        /// the verify to finish on a worker (`respondOnLoop`).
        var pendingVerify: PendingVerify?
        /// Set instead of an answer on an event loop for an exchange checked there: the store's
        /// transaction, answered from the writer's thread (`LoopAnswer.later`).
        var pendingExchange: PendingExchange?
        init(_ response: HTTPResponse, chainID: ChainID? = nil, error: ErrorCode? = nil) {
            self.response = response
            self.chainID = chainID
            self.error = error
        }
        init(pending: PendingVerify) {
            self.init(HTTPResponse(status: 500))
            pendingVerify = pending
        }
        init(pending: PendingExchange) {
            self.init(HTTPResponse(status: 500))
            pendingExchange = pending
        }
    }

    /// An exchange whose request was checked on the event loop: `store.exchange(_:context:then:)`
    /// with these, which returns at once (`LineageStore.writesWithoutWaiting`).
    struct PendingExchange: Sendable {
        var token: String
        var context: RequestContext
    }

    /// A verify (or `/v1/authz`) whose token and proof were checked on the event loop and
    /// whose answer needs the store: `store.verify` with these, on a worker.
    struct PendingVerify: Sendable {
        var token: String
        var maxAge: Duration?
        var context: RequestContext
    }

    package func respond(to request: HTTPRequest, from peer: IPAddress) -> HTTPResponse {
        answer(request, from: peer, onLoop: false).waitedFor()
    }

    /// Verify and `/v1/authz` answer from memory (`LineageStore.verifyFromMemory`); when memory
    /// cannot, the store's read (PostgreSQL: a network round trip, or a connect) is left to a
    /// worker, so that no event loop, and none of the connections it serves, ever waits for the
    /// database (docs/design.md, "Concurrency: event loops plus a worker pool").
    package func respondOnLoop(to request: HTTPRequest, from peer: IPAddress) -> LoopAnswer {
        answer(request, from: peer, onLoop: true)
    }

    private func answer(_ request: HTTPRequest, from peer: IPAddress, onLoop: Bool) -> LoopAnswer {
        let started = monotonicNow()
        let route = Route.find(request.path)
        let path = route?.rawValue ?? String(request.path)
        let client = clientAddress.resolve(
            peer: peer, forwardedFor: request.headers.filter { $0.name == "x-forwarded-for" }.map(\.value),
            realIP: request.header("x-real-ip")).description  // formatted once: audit and log share it
        let outcome: Outcome
        let routeName: String
        if let route {
            routeName = path
            if route.accepts(request.method) {
                let handled = handle(route, request, client: client, peer: peer, onLoop: onLoop)
                if let pending = handled.pendingVerify {
                    return .onWorker { [self] in
                        let outcome = Self.carryingError(route, finishVerify(pending, route: route, request: request))
                        finish(request.method, path: path, route: path, outcome: outcome, client: client, started: started)
                        return outcome.response
                    }
                }
                if let pending = handled.pendingExchange {
                    return .later { [self] answer in
                        store.exchange(pending.token, context: pending.context) { [self] result in
                            // On the writer's thread: the answer is made on the loop, so that
                            // the writer goes on to its next batch.
                            answer { [self] in
                                let outcome = exchangedOutcome(result, context: pending.context, request: request)
                                finish(request.method, path: path, route: path, outcome: outcome, client: client, started: started)
                                return outcome.response
                            }
                        }
                    }
                }
                outcome = Self.carryingError(route, handled)
            } else {
                outcome = Outcome(ErrorResponse.body(405, .methodNotAllowed, "\(request.method) is not allowed on \(path).",
                                                     headers: [("Allow", route.allowed.joined(separator: ", "))]))
            }
        } else {
            routeName = "other"
            outcome = Outcome(ErrorResponse.body(404, .notFound, "No such endpoint."))
        }
        finish(request.method, path: path, route: routeName, outcome: outcome, client: client, started: started)
        return .response(outcome.response)
    }

    /// A 401 of verify or `/v1/authz` with its body in `X-Baton-Error` too: nginx auth_request
    /// drops a subrequest's body, and this header carries it through (docs/deploy.md), so the
    /// client still learns whether to exchange or log in again.
    private static func carryingError(_ route: Route, _ handled: Outcome) -> Outcome {
        guard route == .verify || route == .authz, handled.response.status == 401 else { return handled }
        var carrying = handled
        carrying.response.headers.append(("X-Baton-Error", String(decoding: handled.response.body, as: UTF8.self)))
        return carrying
    }

    /// An exchange's answer: the successor's bundle, or the refusal.
    private func exchangedOutcome(_ result: Result<TokenBundle, BatonError>, context: RequestContext, request: HTTPRequest) -> Outcome {
        switch result {
        case .success(let bundle):
            Outcome(HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")] + nonceHeader(context),
                                 body: Self.bundleBody(bundle)),
                    chainID: bundle.chainID)
        case .failure(let error):
            errorOutcome(error, route: .exchange, request: request)
        }
    }

    /// The rest of a verify the event loop began: the store's read, on a worker.
    private func finishVerify(_ pending: PendingVerify, route: Route, request: HTTPRequest) -> Outcome {
        do throws(BatonError) {
            return verifiedOutcome(try store.verify(pending.token, maxAge: pending.maxAge, context: pending.context), context: pending.context)
        } catch {
            return errorOutcome(error, route: route, request: request)
        }
    }

    /// Verify's answer for `token`: on an event loop from memory only, else with the store.
    func verifying(_ token: String, maxAge: Duration?, context: RequestContext, onLoop: Bool) throws(BatonError) -> Outcome {
        guard onLoop else { return verifiedOutcome(try store.verify(token, maxAge: maxAge, context: context), context: context) }
        guard let verified = try store.verifyFromMemory(token, maxAge: maxAge, context: context) else {
            return Outcome(pending: PendingVerify(token: token, maxAge: maxAge, context: context))
        }
        return verifiedOutcome(verified, context: context)
    }

    /// Login, confirm and password (argon2id), logout and an exchange that waits for its
    /// commit (PostgreSQL, or a DPoP proof to check: on SQLite without one it starts on the
    /// loop and the writer answers, `LoopAnswer.later`), readiness (a write), and the sessions
    /// list and introspection (reads) may block. Verify
    /// starts on the event loop and answers there from memory, or finishes on a worker
    /// (`respondOnLoop`); the rest answer from memory. A
    /// verify for a state-changing original request (`X-Original-Method`, or Traefik's
    /// `X-Forwarded-Method`, not GET, HEAD or OPTIONS) of a bound chain records its proof
    /// durably, so it goes to the workers too.
    /// (A refused proof's audit is never written on the caller's thread: `ProofFailureLog`.)
    package func mayBlock(_ request: HTTPRequest) -> Bool {
        switch Route.find(request.path) {
        // A token exchange may also fetch an identity provider's keys (at most one worker per provider).
        case .login, .logout, .confirm, .password, .readyz, .session, .revokeOtherSessions, .revoke, .tokenExchange: true
        // Starts on the loop when the store answers from a writer thread of its own and no
        // proof's signature (about 90 µs) is to be checked: no worker waits for the commit.
        case .exchange: !store.writesWithoutWaiting || request.header("dpop") != nil
        case .sessions, .introspect: true  // reads of the store
        case .verify: OriginalRequest.method(in: request).map { !Self.safeMethods.contains($0) } ?? false
        case .authz: !Self.safeMethods.contains(request.method)
        case .healthz, .metrics, .metadata, nil: false
        }
    }

    /// RFC 9110 §9.2.1's safe methods that an app's request may have: a verify for one of them
    /// changes nothing, and its proof is remembered in memory only.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS"]

    package func respond(to rejection: ServerRejection, from peer: IPAddress) -> HTTPResponse {
        let response = ErrorResponse.response(for: rejection)
        finish("-", path: "-", route: "rejected", outcome: Outcome(response), client: peer.description, started: monotonicNow())
        return response
    }

    private func finish(_ method: String, path: String, route: String, outcome: Outcome, client: String, started: Duration) {
        let elapsed = monotonicNow() - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.record(route: route, status: outcome.response.status, seconds: seconds)
        log?.log(method: method, path: path, status: outcome.response.status, durationMicroseconds: Int64(seconds * 1e6),
                 ip: client, chainID: outcome.chainID, error: outcome.error, at: SystemClock().now())
    }

    private func handle(_ route: Route, _ request: HTTPRequest, client: String, peer: IPAddress, onLoop: Bool) -> Outcome {
        var context = RequestContext(ip: client, userAgent: request.header("user-agent"), deviceID: request.header("x-device-id"))
        do throws(BatonError) {
            // X-Device-Id is an identifier like a login's device_id: the same rule, before the store
            // (a refused request consumes nothing). A User-Agent is recorded as sent, escaped on output.
            if let deviceID = context.deviceID, route.readsCredentials {
                try LoginRequest.validateIdentifier(deviceID, named: "X-Device-Id")
            }
            switch route {
            case .login: return try login(request, context: context, peer: peer)
            case .tokenExchange: return try tokenExchange(request, context: context, peer: peer)
            case .exchange:
                context.exchangeAttempt = try ExchangeAttempt.parse(request.headers.filter { $0.name == "x-baton-exchange-attempt" }.map(\.value))
                guard let token = try token(request, &context, peer: peer, route: route) else { return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing) }
                // On an event loop (`mayBlock`: a store that writes without waiting, no proof
                // to verify): the transaction's answer comes from the writer, and no thread waits.
                if onLoop, store.writesWithoutWaiting { return Outcome(pending: PendingExchange(token: token, context: context)) }
                let bundle = try store.exchange(token, context: context)
                return exchangedOutcome(.success(bundle), context: context, request: request)
            case .verify:
                // The route matched the path alone; the query may carry RFC 9470's max_age.
                let maxAge = try VerifyQuery.maxAge(in: request.target)
                guard let token = try token(request, &context, peer: peer, route: route) else { return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing) }
                return try verifying(token, maxAge: maxAge, context: context, onLoop: onLoop)
            case .authz:
                return try authorize(request, context: &context, peer: peer, onLoop: onLoop)
            case .introspect, .revoke:
                return try oauth(route, request, context: context, peer: peer)
            case .metadata:
                return metadata(request, peer: peer)
            case .confirm, .password:
                guard let token = try token(request, &context, peer: peer, route: route) else { return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing) }
                return try confirmation(route, request, token: token, context: context)
            case .logout:
                guard let token = try token(request, &context, peer: peer, route: route) else { return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing) }
                try store.logout(token, context: context)
                return Outcome(HTTPResponse(status: 204, headers: nonceHeader(context)))
            case .sessions, .revokeOtherSessions, .session:
                guard let token = try token(request, &context, peer: peer, route: route) else { return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing) }
                return try sessions(route, request, token: token, context: context)
            case .healthz:
                return Outcome(.json(200, #"{"status":"ok"}"#))
            case .readyz:
                return store.isWritable()
                    ? Outcome(.json(200, #"{"status":"ready"}"#))
                    : Outcome(ErrorResponse.body(503, .unavailable, "The database is not writable."))
            case .metrics:
                return Outcome(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")],
                                            body: Array((metrics.render(store: store, replayCacheEntries: gate.options.checker.replayCache.count,
                                                                          replayCacheCapacity: gate.options.checker.replayCache.capacity)
                                                           + (moreMetrics?() ?? "")).utf8)))
            }
        } catch {
            return errorOutcome(error, route: route, request: request)
        }
    }

    /// The answer to a request refused with `error`, counted in the metrics (proof failures)
    /// and, for a 503, in the server's log (`UnavailableLog`).
    private func errorOutcome(_ error: BatonError, route: Route, request: HTTPRequest) -> Outcome {
        // The chain a refused token belongs to, when its MAC proves we issued it: the log line
        // of a reuse then names the chain an investigator looks up (never the token itself).
        var chainID: ChainID?
        if let credential = try? credential(request) { chainID = store.chainID(ofToken: credential.token) }
        var response = ErrorResponse.response(for: error, atLogin: route == .login || route == .tokenExchange)
        if case .unavailable(let reason) = error { unavailable.record(path: route.rawValue, reason: reason, at: SystemClock().now()) }
        switch error {
        case .invalidDPoPProof(let failure, _):
            metrics.recordProofFailure(failure)
        case .useDPoPNonce(let failure, _):
            metrics.recordProofFailure(failure)
            if let nonce = gate.currentNonce { response.headers.append(("DPoP-Nonce", nonce)) }
        default:
            break
        }
        return Outcome(response, chainID: chainID, error: error.code)
    }

    /// The token of a token-presenting request, and in `context` what its DPoP proof showed;
    /// nil without an `Authorization` header of either scheme. A bearer request does no more
    /// than before: its `DPoP` headers are not even looked at.
    ///
    /// `original`: the request being authorized when the request line carries it (`/v1/authz`:
    /// the method as sent, the path after the prefix); verify takes it from `X-Original-*`.
    func token(_ request: HTTPRequest, _ context: inout RequestContext, peer: IPAddress, route: Route,
               original: DPoPGate.Original? = nil) throws(BatonError) -> String? {
        guard let credential = try credential(request) else { return nil }
        if credential.isDPoP {
            // The token's MAC (about 1 µs) before the proof's signature (about 90 µs): a forged
            // or made-up token is refused without costing a verification (issue 28, finding 6).
            guard let chainID = store.chainID(ofToken: credential.token) else { throw .tokenInvalid }
            // Verify and authz run on the event loops: their proof's signature waits for the
            // chain's key, and a chain over its budget of refused proofs is refused before
            // its proof is parsed (issue 28, finding 3).
            let deferSignature = route == .verify || original != nil
            if deferSignature, let refusal = store.proofBudgetRefusal(for: chainID) { throw refusal }
            (context.proof, context.replayClaim) = gate.presentation(of: credential, in: request, from: peer, useOriginal: route == .verify,
                                                                     original: original, deferSignature: deferSignature)
            let method = original?.method ?? gate.method(of: request, from: peer, useOriginal: true)
            if route == .verify || original != nil, !Self.safeMethods.contains(method) {
                context.authorizesStateChange = true
            }
        }
        return credential.token
    }

    /// `DPoP-Nonce` on the answer to a DPoP request when every proof needs a nonce.
    func nonceHeader(_ context: RequestContext) -> [(name: String, value: String)] {
        guard context.proof != .bearer, gate.noncesAlways, let nonce = gate.currentNonce else { return [] }
        return [("DPoP-Nonce", nonce)]
    }

    private func login(_ request: HTTPRequest, context: RequestContext, peer: IPAddress) throws(BatonError) -> Outcome {
        guard Self.isJSON(request.header("content-type")) else { return Outcome(ErrorResponse.unsupportedMediaType) }
        let body = try JSONBody(request.body)
        let username = try body.string("username")
        let password = try body.string("password")
        let deviceID = try body.string("device_id")
        var deviceClass = DeviceClass.other
        if let text = try body.optionalString("device_class") {
            guard let parsed = DeviceClass(rawValue: text) else {
                throw .invalidArgument("device_class must be one of mobile, desktop, web, other.")
            }
            deviceClass = parsed
        }
        let deviceName = try body.optionalString("device_name")
        let login = LoginRequest(username: username, password: password, deviceID: deviceID, deviceClass: deviceClass,
                                 deviceName: deviceName, proofKey: nil)
        // The proof after the body's checks, the identifiers' rules included (a malformed login
        // is refused the same way with or without one, and before a signature is verified:
        // cheap checks first, issue 28 finding 6), and before the password (argon2id) is spent
        // on a login that cannot bind.
        try login.validate()
        let proof = try gate.loginKey(request, from: peer)
        var context = context
        context.replayClaim = proof?.claim
        var bound = login
        bound.proofKey = proof?.jkt
        let bundle = try store.login(bound, context: context)
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        if proof != nil, gate.noncesAlways, let nonce = gate.currentNonce { headers.append(("DPoP-Nonce", nonce)) }
        return Outcome(HTTPResponse(status: 200, headers: headers, body: Self.bundleBody(bundle)), chainID: bundle.chainID)
    }

    /// "Your devices": the list, one session signed out, every other one signed out. Signing
    /// out needs a recent authentication (`signOutMaxAge`).
    private func sessions(_ route: Route, _ request: HTTPRequest, token: String, context: RequestContext) throws(BatonError) -> Outcome {
        switch route {
        case .session:
            // A segment that is not a chain id names no session of anyone's: chain 0 never exists,
            // so the token is still checked first and the answer is the same 404.
            let id = SessionPath.chainSegment(of: request.path).flatMap(ChainID.init(hex:)) ?? ChainID(rawValue: 0)
            try store.signOut(session: id, presentedBy: token, maxAge: signOutMaxAge, context: context)
            return Outcome(HTTPResponse(status: 204), chainID: id)
        case .revokeOtherSessions:
            let revoked = try store.signOutOtherSessions(presentedBy: token, maxAge: signOutMaxAge, context: context)
            return Outcome(.json(200, JSONValue.object(["revoked": .int(Int64(revoked.count))]).text, headers: [("Cache-Control", "no-store")]))
        default:
            let sessions = try store.sessions(presentedBy: token, context: context)
            let body = JSONValue.object(["sessions": .array(sessions.map(SessionPath.json))]).text
            return Outcome(.json(200, body, headers: [("Cache-Control", "no-store")]), chainID: sessions.first { $0.isCurrent }?.chainID)
        }
    }

    /// `/v1/confirm` and `/v1/password`: a bearer head and a JSON body with the password(s).
    /// The token is not exchanged; the answer carries the chain's new `auth_time`.
    private func confirmation(_ route: Route, _ request: HTTPRequest, token: String, context: RequestContext) throws(BatonError) -> Outcome {
        guard Self.isJSON(request.header("content-type")) else { return Outcome(ErrorResponse.unsupportedMediaType) }
        let body = try JSONBody(request.body)
        let answer: [String: JSONValue]
        if route == .confirm, try body.optionalString("id_token") != nil {
            guard try body.optionalString("password") == nil else { throw .invalidArgument("Give password or id_token, not both.") }
            let authTime = try confirmWithIDToken(token, try body.string("id_token"), context: context)
            answer = ["auth_time": .string(authTime.rfc3339)]
        } else if route == .confirm {
            let authTime = try store.confirm(token, password: try body.string("password"), context: context)
            answer = ["auth_time": .string(authTime.rfc3339)]
        } else {
            let change = try store.changePassword(
                presentedBy: token, current: try body.string("current_password"), new: try body.string("new_password"), context: context)
            answer = ["auth_time": .string(change.authTime.rfc3339), "revoked_chains": .int(Int64(change.revokedChains.count))]
        }
        return Outcome(.json(200, JSONValue.object(answer).text, headers: [("Cache-Control", "no-store")]))
    }

    /// The token (RFC 6750 §2.1, RFC 9449 §7.1): `Authorization: Bearer <token>` or
    /// `Authorization: DPoP <token>`; nil when there is neither (another scheme counts as none).
    /// A scheme with nothing after it is token_invalid. The usual headers are taken by bytes
    /// first (`plainCredential`): the hot path of verify, bearer and bound.
    func credential(_ request: HTTPRequest) throws(BatonError) -> Credential? {
        guard let header = request.header("authorization") else { return nil }
        if let credential = Self.plainCredential(header) { return credential }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count >= 1 else { return nil }
        let scheme = parts[0].lowercased()
        guard scheme == "bearer" || scheme == "dpop" else { return nil }
        guard parts.count == 2 else { throw .tokenInvalid }
        return Credential(token: String(parts[1].trimmingSpaces), isDPoP: scheme == "dpop")
    }

    /// The usual header's credential by bytes: `Bearer` or `DPoP` in any case, one space, then
    /// a token with no space, tab or non-ASCII byte (the character-level path above answers
    /// the rest, the same way). nil when the header is not of that shape.
    static func plainCredential(_ header: String) -> Credential? {
        var header = header
        return header.withUTF8 { bytes -> Credential? in
            let isDPoP: Bool
            if startsWithScheme("bearer", bytes) {
                isDPoP = false
            } else if startsWithScheme("dpop", bytes) {
                isDPoP = true
            } else {
                return nil
            }
            let token = UnsafeBufferPointer(rebasing: bytes[(isDPoP ? 5 : 7)...])
            guard token.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
            return Credential(token: String(decoding: token, as: UTF8.self), isDPoP: isDPoP)
        }
    }

    /// Whether `bytes` start with `scheme` (lowercase ASCII letters) in any case, one space and
    /// at least one byte more.
    private static func startsWithScheme(_ scheme: StaticString, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = scheme.utf8CodeUnitCount
        guard bytes.count > count + 1 else { return false }
        for index in 0..<count where bytes[index] | 0x20 != scheme.utf8Start[index] { return false }  // | 0x20 lowercases ASCII letters
        return bytes[count] == 32
    }

    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first?.trimmingSpaces.lowercased()
        return mediaType == "application/json"
    }

    /// `{"auth_time","chain_id","device_id","expires_at","user_id","username"}`, written directly
    /// as bytes (verify is the hottest path); the two user-supplied strings are escaped.
    static func verificationBody(_ verified: Verification) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(192 + verified.deviceID.utf8.count + verified.username.utf8.count)
        out.append(#"{"auth_time":""#)
        RFC3339.append(verified.authTime, to: &out)
        out.append(#"","chain_id":""#)
        verified.chainID.appendHex(to: &out)
        out.append(#"","device_id":"#)
        JSONValue.writeString(verified.deviceID, to: &out)
        out.append(#","expires_at":""#)
        RFC3339.append(verified.expiresAt, to: &out)
        out.append(#"","user_id":"#)
        out.append(utf8: String(verified.userID))
        out.append(#","username":"#)
        JSONValue.writeString(verified.username, to: &out)
        out.append(125)  // }
        return out
    }

    /// `{"chain_id","exchange_until","expires_at","expires_in","generation","token","token_type"}`
    /// (login's and exchange's answer), written directly as bytes in the generic writer's
    /// sorted order: that writer was 5 % of an exchange's CPU. The chain id (hex), the times
    /// and the numbers need no escaping; the token is written as any JSON string is.
    static func bundleBody(_ bundle: TokenBundle) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(224 + bundle.token.utf8.count)
        out.append(#"{"chain_id":""#)
        bundle.chainID.appendHex(to: &out)
        out.append(#"","exchange_until":""#)
        RFC3339.append(bundle.exchangeUntil, to: &out)
        out.append(#"","expires_at":""#)
        RFC3339.append(bundle.expiresAt, to: &out)
        out.append(#"","expires_in":"#)
        out.append(utf8: String(bundle.expiresIn))
        out.append(#","generation":"#)
        out.append(utf8: String(bundle.generation))
        out.append(#","token":"#)
        JSONValue.writeString(bundle.token, to: &out)
        out.append(bundle.isBound ? #","token_type":"DPoP"}"# : #","token_type":"Bearer"}"#)
        return out
    }
}

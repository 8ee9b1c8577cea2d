import Foundation
import BatonAPI
import BatonCore
import BatonDPoP
import BatonHTTP
import BatonStorage

extension ServeCommand {
    /// Everything `serve` needs, validated.
    struct Settings: Equatable {
        var databasePath = "./baton.db"
        var keyPath: String?
        var listen = ListenAddress("127.0.0.1:8080")!
        var policy = Policy()
        var trustedProxies = [CIDR("127.0.0.1/32")!, CIDR("::1/128")!]
        /// Whether `--trusted-proxy` was given: a gateway whose forwarding headers name the origin.
        var isTrustedProxyGiven = false
        var maxConnections = 1024
        var requestTimeout: Duration = .seconds(10)
        var idleTimeout: Duration = .seconds(60)
        var hashConcurrency: Int?
        var workerThreads = 256
        /// `--event-loops`; nil: one per usable CPU.
        var eventLoops: Int?
        /// `--verify-memory`: chain rows verify remembers, for every thread (either store); nil: the store's default.
        var verifyMemoryRows: Int?
        var pruneEvery: Duration?
        var retention: Duration = .seconds(90 * 86_400)
        /// `--sign-out-max-age`: how recent an authentication signing sessions out needs.
        var signOutMaxAge: Duration = .seconds(300)
        var accessLog = true
        /// `--new-key`: create a missing key even though the database has users or chains.
        var allowNewKey = false
        /// `--unsafe-postgres-durability`: start on a cluster with fsync or full_page_writes off.
        var allowsUnsafePostgres = false
        /// `--db-connections`: the PostgreSQL pool's size.
        var databaseConnections = 16
        /// `--webhook` with its `--webhook-secret-file` and `--webhook-events`, in order.
        var webhooks: [WebhookSetting] = []
        /// `--webhook-retry-period`, `--webhook-timeout`.
        var webhookRetryPeriod: Duration = .seconds(86_400)
        var webhookTimeout: Duration = .seconds(10)
        /// `--webhook-ca-file`: CA certificates for HTTPS receivers, instead of the system's.
        var webhookCAFile: String?
        /// `--webhook-backoff`: the first retry's delay (then doubling, up to an hour).
        var webhookBackoff: Duration = .seconds(5)
        /// `--webhook-max-backoff`: the longest wait between two attempts.
        var webhookMaxBackoff: Duration = .seconds(3600)
        /// `--dpop`: whether logins bind chains to keys (RFC 9449).
        var dpop: DPoPOptions.Mode = .optional
        /// `--dpop-nonce`: when a proof needs a server nonce.
        var dpopNonce: NonceMode = .whenClockIsOff
        /// `--dpop-nonce-key-file`: the nonce key (a key file's format); nil: derived from the token key.
        var dpopNonceKeyFile: String?
        /// `--dpop-previous-nonce-key-file`: the nonce key that one replaced, accepted for one nonce lifetime.
        var dpopPreviousNonceKeyFile: String?
        /// `--dpop-window`: how old a proof's `iat` may be.
        var dpopWindow: Duration = .seconds(60)
        /// `--dpop-audit-window`: how long a chain's refused proofs are counted into one audit event.
        var dpopAuditWindow: Duration = .seconds(10)
        /// `--dpop-replay-cache`: the replay cache's capacity.
        var dpopReplayCache = 500_000
        /// `--dpop-refusal-burst`: a chain's refused proofs at once (0: no budget).
        var dpopRefusalBurst = 20
        /// `--dpop-refusal-rate`: refused proofs a chain regains each second.
        var dpopRefusalRate = 5
        /// `--dpop-replay-share`: what one key may hold of it; nil: the cache's default.
        var dpopReplayShare: Int?
        /// `--public-url`: the scheme, host and port clients reach Baton at (the proofs' `htu`).
        var publicURL: String?
        /// `--introspection-client`: the resource servers of `/v1/introspect` and `/v1/revoke`.
        var introspectionClients: [IntrospectionClientSetting] = []
        /// `--authz-step-up`: `/v1/authz`'s step-up rules.
        var authzStepUp: [StepUpPath] = []
        /// `--identity-refetch-interval`: how often a token naming an unknown `kid` may make an
        /// identity provider's keys be fetched again (docs/identity.md).
        var identityRefetchInterval: Duration = .seconds(30)
        /// `--identity-fetch-timeout`: the longest a discovery or JWKS fetch may take.
        var identityFetchTimeout: Duration = .seconds(5)
    }

    /// `--dpop-nonce`.
    enum NonceMode: String, Equatable, CaseIterable {
        case off
        case whenClockIsOff = "when-clock-off"
        case always
    }

    /// One `--webhook` endpoint before its secret file is read.
    struct WebhookSetting: Equatable {
        var url: String
        var secretFile: String
        /// Empty: every type.
        var types: Set<WebhookEventType>
    }

    /// Parses arguments and environment into settings.
    static func settings(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Settings {
        let parsed = try parser.parse(arguments, environment: environment)
        let values = parsed.values
        guard parsed.positional.isEmpty else { throw UsageError(message: "Unexpected argument '\(parsed.positional[0])'.") }
        var settings = Settings()
        /// `Invalid value 'abc' for '--token-ttl <duration>'` or `… for BATON_TOKEN_TTL`: where the value came from.
        func invalid(_ name: String, _ text: String, _ expected: String) -> UsageError {
            UsageError(message: "Invalid value '\(text)' for \(parsed.source(of: parser.option(name))): \(expected).")
        }
        func duration(_ name: String, allowZero: Bool = false) throws(UsageError) -> Duration? {
            guard let text = values[name]?.last else { return nil }
            guard let value = parseDuration(text) else {
                throw invalid(name, text, "expected a duration such as 90s, 15m, 7d\(allowZero ? " or 0" : "")")
            }
            guard allowZero || value > .zero else { throw invalid(name, text, "must be positive") }
            return value
        }
        func integer(_ name: String, minimum: Int, maximum: Int = 1 << 20) throws(UsageError) -> Int? {
            guard let text = values[name]?.last else { return nil }
            guard let value = Int(text), value >= minimum else {
                throw invalid(name, text, minimum == 1 ? "must be a positive whole number" : "expected a whole number of at least \(minimum)")
            }
            // A bound far above any machine's need, so sizes derived from it cannot overflow.
            guard value <= maximum else { throw invalid(name, text, "must be at most \(maximum)") }
            return value
        }
        if let db = values["db"]?.last { settings.databasePath = db }
        settings.keyPath = values["key-file"]?.last
        if let text = values["listen"]?.last {
            guard let address = ListenAddress(text) else {
                throw invalid("listen", text, "expected an IP address and port, or localhost:<port> for 127.0.0.1:<port> (no other host names), e.g. 127.0.0.1:8080 or [::1]:8080")
            }
            settings.listen = address
        }
        if let value = try duration("token-ttl") { settings.policy.tokenTTL = value }
        if let value = try duration("exchange-window", allowZero: true) { settings.policy.exchangeWindow = value }
        if let value = try duration("max-session") { settings.policy.maxSession = value }
        if let value = try duration("retry-grace", allowZero: true) { settings.policy.retryGrace = value }
        if let value = try integer("max-chains-per-user", minimum: 0) { settings.policy.maxChainsPerUser = value }
        if let flag = values["one-chain-per-device-class"]?.last {
            guard let on = ["true": true, "1": true, "yes": true, "false": false, "0": false, "no": false][flag.lowercased()] else {
                throw invalid("one-chain-per-device-class", flag, "expected true or false")
            }
            settings.policy.oneChainPerDeviceClass = on
        }
        if let proxies = values["trusted-proxy"] {
            settings.trustedProxies = []
            settings.isTrustedProxyGiven = true
            for text in proxies {
                guard let cidr = CIDR(text) else {
                    throw invalid("trusted-proxy", text, "expected an address or network, e.g. 10.0.0.0/8")
                }
                settings.trustedProxies.append(cidr)
            }
        }
        if let value = try integer("max-connections", minimum: 1) { settings.maxConnections = value }
        if let value = try duration("request-timeout") { settings.requestTimeout = value }
        if let value = try duration("idle-timeout") { settings.idleTimeout = value }
        settings.hashConcurrency = try integer("max-concurrent-hashes", minimum: 1)
        if let value = try integer("worker-threads", minimum: 1) { settings.workerThreads = value }
        settings.eventLoops = try integer("event-loops", minimum: 1)
        settings.verifyMemoryRows = try integer("verify-memory", minimum: 0, maximum: 1 << 26)
        settings.pruneEvery = try duration("prune-every")
        if let value = try duration("retention", allowZero: true) { settings.retention = value }
        if let value = try duration("sign-out-max-age") { settings.signOutMaxAge = value }
        if let value = try duration("identity-refetch-interval") {
            guard value >= .seconds(1), value <= .seconds(3600) else {
                throw invalid("identity-refetch-interval", values["identity-refetch-interval"]?.last ?? "", "must be 1s to 1h")
            }
            settings.identityRefetchInterval = value
        }
        if let value = try duration("identity-fetch-timeout") {
            guard value >= .seconds(1), value <= .seconds(60) else {
                throw invalid("identity-fetch-timeout", values["identity-fetch-timeout"]?.last ?? "", "must be 1s to 60s")
            }
            settings.identityFetchTimeout = value
        }
        if let text = values["access-log"]?.last {
            guard text == "on" || text == "off" else { throw invalid("access-log", text, "expected on or off") }
            settings.accessLog = text == "on"
        }
        settings.allowNewKey = values["new-key"] != nil
        settings.allowsUnsafePostgres = values["unsafe-postgres-durability"] != nil
        if let value = try integer("db-connections", minimum: 1) { settings.databaseConnections = value }
        // The endpoints come from the command line or from the BATON_WEBHOOK* variables, never
        // some of each: pairing by position across the two would pair the wrong ones.
        let webhookOptions = ["webhook", "webhook-secret-file", "webhook-events"]
        let webhooksFromEnvironment = !webhookOptions.contains { values[$0] != nil && !parsed.fromEnvironment.contains($0) }
        func webhookValues(_ name: String) -> [String] {
            webhooksFromEnvironment || !parsed.fromEnvironment.contains(name) ? values[name] ?? [] : []
        }
        settings.webhooks = try webhookSettings(webhookValues("webhook"), secretFiles: webhookValues("webhook-secret-file"),
                                                events: webhookValues("webhook-events"),
                                                fromEnvironment: webhooksFromEnvironment)
        if let value = try duration("webhook-retry-period") { settings.webhookRetryPeriod = value }
        if let value = try duration("webhook-timeout") { settings.webhookTimeout = value }
        if let path = values["webhook-ca-file"]?.last {
            guard FileManager.default.isReadableFile(atPath: path) else { throw invalid("webhook-ca-file", path, "no readable file there") }
            settings.webhookCAFile = path
        }
        if let value = try duration("webhook-backoff") { settings.webhookBackoff = value }
        if let value = try duration("webhook-max-backoff") { settings.webhookMaxBackoff = value }
        if let text = values["dpop"]?.last {
            guard let mode = DPoPOptions.Mode(rawValue: text) else { throw invalid("dpop", text, "expected off, optional or required") }
            settings.dpop = mode
        }
        if let text = values["dpop-nonce"]?.last {
            guard let mode = NonceMode(rawValue: text) else { throw invalid("dpop-nonce", text, "expected off, when-clock-off or always") }
            settings.dpopNonce = mode
        }
        settings.dpopNonceKeyFile = values["dpop-nonce-key-file"]?.last
        settings.dpopPreviousNonceKeyFile = values["dpop-previous-nonce-key-file"]?.last
        if let value = try duration("dpop-window") {
            guard value <= .seconds(3600) else { throw invalid("dpop-window", values["dpop-window"]?.last ?? "", "must be at most 1h") }
            settings.dpopWindow = value
        }
        if let value = try duration("dpop-audit-window", allowZero: true) {
            guard value <= .seconds(3600) else { throw invalid("dpop-audit-window", values["dpop-audit-window"]?.last ?? "", "must be at most 1h") }
            settings.dpopAuditWindow = value
        }
        if let value = try integer("dpop-replay-cache", minimum: 1, maximum: 1 << 26) { settings.dpopReplayCache = value }
        if let value = try integer("dpop-refusal-burst", minimum: 0, maximum: 1_000_000) { settings.dpopRefusalBurst = value }
        if let value = try integer("dpop-refusal-rate", minimum: 1, maximum: 1_000_000) { settings.dpopRefusalRate = value }
        if let value = try integer("dpop-replay-share", minimum: 1, maximum: 1 << 26) {
            guard value <= settings.dpopReplayCache else {
                throw invalid("dpop-replay-share", String(value), "must be at most --dpop-replay-cache (\(settings.dpopReplayCache))")
            }
            settings.dpopReplayShare = value
        }
        if let text = values["public-url"]?.last {
            guard let url = publicOrigin(text) else {
                throw invalid("public-url", text, "expected an http:// or https:// URL with a host and no path, query or fragment, e.g. https://auth.example.com")
            }
            settings.publicURL = url
        }
        for text in values["introspection-client"] ?? [] {
            guard let client = IntrospectionClientSetting(text) else {
                throw invalid("introspection-client", text, "expected ID:SECRET-FILE, an id of 1-64 letters, digits, '.', '_' or '-', e.g. kong:/etc/baton/kong.secret")
            }
            guard !settings.introspectionClients.contains(where: { $0.id == client.id }) else {
                throw invalid("introspection-client", text, "the client id '\(client.id)' is given twice")
            }
            settings.introspectionClients.append(client)
        }
        for text in values["authz-step-up"] ?? [] {
            guard let rule = StepUpPath(text) else {
                throw invalid("authz-step-up", text, "expected PATH=SECONDS, a path starting with / without query, percent-escape or dot segment, e.g. /api/transfer=300")
            }
            settings.authzStepUp.append(rule)
        }
        guard settings.webhookMaxBackoff >= settings.webhookBackoff else {
            throw UsageError(message: "--webhook-max-backoff must not be shorter than --webhook-backoff.")
        }
        return settings
    }
}

extension ServeCommand {
    /// `--public-url` as the origin proofs' `htu` start with: scheme and authority, normalized
    /// as `TargetURI` normalizes (`HTTPS://Auth.Example.com:443/` is `https://auth.example.com`);
    /// nil for anything else (another scheme, a path, a query, userinfo).
    static func publicOrigin(_ text: String) -> String? {
        guard let uri = TargetURI(text), let schemeEnd = uri.text.firstRange(of: "://") else { return nil }
        let rest = uri.text[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/"), rest[slash...] == "/", !text.contains("?"), !text.contains("#") else { return nil }
        // A path other than "/" is refused: `htu` is this origin plus the request's own path.
        let afterAuthority = text.firstRange(of: "://").map { text[$0.upperBound...] } ?? ""
        if let pathStart = afterAuthority.firstIndex(of: "/"), afterAuthority[pathStart...] != "/" { return nil }
        return String(uri.text[..<slash])
    }

    /// Pairs each `--webhook` URL with the `--webhook-secret-file` and (if any are given) the
    /// `--webhook-events` at the same position; `fromEnvironment`: the values are the
    /// `BATON_WEBHOOK*` variables' (white-space separated), and errors name those.
    static func webhookSettings(_ urls: [String], secretFiles: [String], events: [String], fromEnvironment: Bool = false) throws(UsageError) -> [WebhookSetting] {
        guard secretFiles.count == urls.count else {
            throw UsageError(message: fromEnvironment
                ? "Each BATON_WEBHOOK value needs its own BATON_WEBHOOK_SECRET_FILE value, in the same order (\(urls.count) in BATON_WEBHOOK, \(secretFiles.count) in BATON_WEBHOOK_SECRET_FILE)."
                : "Each --webhook needs its own --webhook-secret-file, in the same order (\(urls.count) --webhook, \(secretFiles.count) --webhook-secret-file).")
        }
        guard events.isEmpty || events.count == urls.count else {
            throw UsageError(message: fromEnvironment
                ? "BATON_WEBHOOK_EVENTS has a value for every BATON_WEBHOOK value or is unset, in the same order (\(urls.count) in BATON_WEBHOOK, \(events.count) in BATON_WEBHOOK_EVENTS)."
                : "--webhook-events is given for every --webhook or for none, in the same order (\(urls.count) --webhook, \(events.count) --webhook-events).")
        }
        let urlSource = fromEnvironment ? "BATON_WEBHOOK" : "'--webhook <url>'"
        var settings: [WebhookSetting] = []
        for (index, url) in urls.enumerated() {
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), url.count > 8, !url.contains(where: \.isWhitespace) else {
                throw UsageError(message: "Invalid value '\(url)' for \(urlSource): expected an http:// or https:// URL.")
            }
            guard !settings.contains(where: { $0.url == url }) else {
                throw UsageError(message: fromEnvironment ? "BATON_WEBHOOK names \(url) twice." : "--webhook \(url) is given twice.")
            }
            var types: Set<WebhookEventType> = []
            if !events.isEmpty, events[index] != "all" {
                for name in events[index].split(separator: ",", omittingEmptySubsequences: false) {
                    guard let type = WebhookEventType(rawValue: String(name)) else {
                        let known = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
                        throw UsageError(message: "Invalid value '\(events[index])' for \(fromEnvironment ? "BATON_WEBHOOK_EVENTS" : "'--webhook-events <types>'"): unknown event type '\(name)' (expected all, or a comma list of: \(known)).")
                    }
                    types.insert(type)
                }
            }
            settings.append(WebhookSetting(url: url, secretFile: secretFiles[index], types: types))
        }
        return settings
    }
}

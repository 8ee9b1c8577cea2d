import BatonAPI
import BatonCore
import BatonHTTP
import BatonIdentity
import BatonPostgres
import BatonStorage
import BatonSync
import BatonWebhooks
import Glibc
import Synchronization

/// `baton serve`: opens the database and serves the HTTP API until SIGTERM or SIGINT.
enum ServeCommand {
    static let parser = OptionParser(options: [
        .init(name: "db", valueName: "path|uri", help: "SQLite database, created with schema.sql on first start; or a postgresql:// URI (libpq syntax, multi-host lists). (default: ./baton.db)"),
        .init(name: "key-file", valueName: "path", help: "Token MAC key, created (mode 0600) on first start; required with PostgreSQL, the same file on every instance. (default: <db>.key)"),
        .init(name: "db-connections", valueName: "n", help: "PostgreSQL connections per instance at most. (default: 16)"),
        .init(name: "listen", valueName: "host:port", help: "Address to listen on: an IP address and port ([::1]:8080 for IPv6; port 0 for any), or localhost:<port> for 127.0.0.1. (default: 127.0.0.1:8080)"),
        .init(name: "token-ttl", valueName: "duration", help: "How long a token grants access. (default: 15m)"),
        .init(name: "exchange-window", valueName: "duration", help: "How long after expiry a token may still be exchanged. (default: 7d)"),
        .init(name: "max-session", valueName: "duration", help: "Absolute life of a login's chain. (default: 30d)"),
        .init(name: "retry-grace", valueName: "duration", help: "Lost-response retry grace (R3a); 0 is strict. (default: 10s)"),
        .init(name: "sign-out-max-age", valueName: "duration", help: "How recent a password confirmation must be to sign sessions out (/v1/sessions). (default: 5m)"),
        .init(name: "identity-refetch-interval", valueName: "duration", help: "How often a token naming a key the identity provider's cached set lacks may make the set be fetched again, per provider (docs/identity.md). (default: 30s)"),
        .init(name: "identity-fetch-timeout", valueName: "duration", help: "The longest an identity provider's discovery or JWKS fetch may take. (default: 5s)"),
        .init(name: "max-chains-per-user", valueName: "n", help: "Live chains per user; a login beyond evicts the oldest; 0: unlimited. (default: 10)"),
        .init(name: "one-chain-per-device-class", valueName: nil, help: "A login revokes the user's live chain of the same device class."),
        .init(name: "trusted-proxy", valueName: "cidr", help: "Proxy whose X-Forwarded-For is believed; repeatable; replaces the default. (default: 127.0.0.1/32, ::1/128)", repeatable: true),
        .init(name: "max-connections", valueName: "n", help: "Open connections at most; more get 503. (default: 1024)"),
        .init(name: "request-timeout", valueName: "duration", help: "Time for a request's head and body to arrive. (default: 10s)"),
        .init(name: "idle-timeout", valueName: "duration", help: "Keep-alive idle time before the server closes. (default: 60s)"),
        .init(name: "event-loops", valueName: "n", help: "Event loops (threads serving connections). (default: one per CPU the process may use: online CPUs cut to its affinity and cgroup quota)"),
        .init(name: "verify-memory", valueName: "rows", help: "Sessions remembered so that verify need not read the database (SQLite, or PostgreSQL with its change announcements): one table for every event loop, 256 bytes a session at most, rounded up to a power of two; when full, a new session takes the place of another (read again when used); 0: verify always reads. (default: 262144, 64 MiB)"),
        .init(name: "worker-threads", valueName: "n", help: "Threads for requests that may block (login, logout, exchanges on PostgreSQL or with a DPoP proof); concurrent writes share commits. (default: 256)"),
        .init(name: "max-concurrent-hashes", valueName: "n", help: "Password hashes run at once (bounds login CPU). (default: half the cores)"),
        .init(name: "prune-every", valueName: "duration", help: "Prune ended chains on this schedule (like `baton admin prune`). (default: off)"),
        .init(name: "retention", valueName: "duration", help: "How long ended chains are kept before pruning. (default: 90d)"),
        .init(name: "access-log", valueName: "on|off", help: "One JSON line per request on stdout. (default: on)"),
        .init(name: "webhook", valueName: "url", help: "Send security events to this URL (Standard Webhooks); repeatable, each with its own --webhook-secret-file. (default: none)", repeatable: true, environmentSeparator: .whiteSpace),
        .init(name: "webhook-secret-file", valueName: "path", help: "The whsec_ signing secret of the --webhook at the same position (mode 0600 or 0400).", repeatable: true, environmentSeparator: .whiteSpace),
        .init(name: "webhook-events", valueName: "types", help: "Event types for the --webhook at the same position: all, or a comma list (docs/webhooks.md). (default: all)", repeatable: true, environmentSeparator: .whiteSpace),
        .init(name: "webhook-retry-period", valueName: "duration", help: "How long an event is retried before it is given up. (default: 1d)"),
        .init(name: "webhook-timeout", valueName: "duration", help: "Answer deadline of one webhook delivery. (default: 10s)"),
        .init(name: "webhook-ca-file", valueName: "path", help: "Verify HTTPS webhook receivers against these CA certificates (PEM) instead of the system's. (default: the system's)"),
        .init(name: "webhook-backoff", valueName: "duration", help: "Delay before the first retry of a failed delivery; it doubles up to --webhook-max-backoff. (default: 5s)"),
        .init(name: "webhook-max-backoff", valueName: "duration", help: "The longest wait between two delivery attempts. (default: 1h)"),
        .init(name: "dpop", valueName: "off|optional|required", help: "Device binding (RFC 9449 DPoP): a login with a valid DPoP proof binds its session to the proof's key; required refuses logins without one; off binds none (bound sessions stay bound). (default: optional)"),
        .init(name: "dpop-nonce", valueName: "off|when-clock-off|always", help: "When a DPoP proof must carry a server nonce (DPoP-Nonce): when its iat is outside the window, on every proof, or never. (default: when-clock-off)"),
        .init(name: "dpop-nonce-key-file", valueName: "path", help: "Key of the DPoP nonces (a key file's format, mode 0600), the same on every instance. (default: derived from the token key)"),
        .init(name: "dpop-previous-nonce-key-file", valueName: "path", help: "The nonce key --dpop-nonce-key-file replaced: its nonces stay valid for one nonce lifetime (2 min) after the start. (default: none)"),
        .init(name: "dpop-window", valueName: "duration", help: "How old a DPoP proof's iat may be (without a nonce). (default: 60s)"),
        .init(name: "dpop-replay-cache", valueName: "n", help: "DPoP proofs remembered at most within the replay window (about 100 bytes each). (default: 500000)"),
        .init(name: "dpop-audit-window", valueName: "duration", help: "A session's refused DPoP proofs within this span are audited (proof_failed, device.proof_rejected) as its first one and one event with their count; 0: one event each. (default: 10s)"),
        .init(name: "dpop-refusal-burst", valueName: "n", help: "DPoP proofs of one session that may be refused at once; past it (and --dpop-refusal-rate), verify answers its proofs 429 unread until the session has one refusal to spend again; 0: no limit. (default: 20)"),
        .init(name: "dpop-refusal-rate", valueName: "n", help: "Refused DPoP proofs a session regains each second. (default: 5)"),
        .init(name: "dpop-replay-share", valueName: "n", help: "Of those, what one key may hold: a device over it is refused (429) alone. (default: a 256th of the cache)"),
        .init(name: "public-url", valueName: "url", help: "The scheme, host and port clients reach Baton at, e.g. https://auth.example.com: DPoP proofs name it. (default: a trusted proxy's X-Forwarded-Proto and X-Forwarded-Host, else http:// and Host)"),
        .init(name: "introspection-client", valueName: "id:path", help: "A resource server allowed to call /v1/introspect and /v1/revoke (HTTP Basic): its client id, then the file holding its secret (mode 0600 or 0400); repeatable. (default: none)", repeatable: true, environmentSeparator: .whiteSpace),
        .init(name: "authz-step-up", valueName: "path=seconds", help: "A step-up rule of /v1/authz (Envoy): original paths under PATH, in any letter case, need an authentication within SECONDS, e.g. /api/transfer=300; repeatable. (default: none)", repeatable: true),
        .init(name: "unsafe-postgres-durability", valueName: nil, help: "Start on a PostgreSQL cluster with fsync or full_page_writes off (a throwaway: a power cut can lose commits it acknowledged). Refused without it.", environment: false),
        .init(name: "new-key", valueName: nil, help: "Make the key file the database's key (creating it if missing) although the database has users or another key: every token becomes invalid.", environment: false),
        .init(name: "help", valueName: nil, help: "Show help information.", environment: false),
    ])

    static var help: String {
        """
        OVERVIEW: Run the Baton HTTP API server.

        Every option can also be set with an environment variable BATON_<OPTION>
        (for example BATON_TOKEN_TTL=5m, BATON_TRUSTED_PROXY=10.0.0.0/8,127.0.0.1/32);
        options given on the command line win; an unknown BATON_ variable is warned
        about. BATON_WEBHOOK, BATON_WEBHOOK_SECRET_FILE and BATON_WEBHOOK_EVENTS
        separate their endpoints' values with spaces, in the same order (a URL may
        hold a comma); they are read only when no --webhook, --webhook-secret-file
        or --webhook-events is given. Durations take ms, s, m, h or d: 90s, 15m, 7d.
        SIGTERM or SIGINT stops the server (draining requests); SIGHUP is logged and
        ignored.

        USAGE: baton serve [<options>]

        OPTIONS:
        \(parser.helpLines())
          -h, --help                    Show help information.
        """
    }

    /// Runs the server until SIGTERM or SIGINT; returns the exit code.
    ///
    /// The order keeps failures cheap: every file a setting names (webhook secrets, the DPoP
    /// nonce key) is read and the address is bound before the database is touched, so a start
    /// refused for any of them creates no database, WAL or key (issue 32: a 0644 webhook secret
    /// once left a database without its key, and the next start refused); the key is created
    /// only with a new, empty database (`KeyFile.load(at:forDatabase:allowNewKey:)`). Should a
    /// step after the store still fail, what this start created is removed again.
    static func run(_ arguments: [String], output: some TextStreams) -> BatonCommand.ExitCode {
        if arguments.contains("--help") || arguments.contains("-h") {
            output.out(help)
            return .success
        }
        Environment.warnAboutUnknownVariables(output)
        let settings: Settings
        do {
            settings = try Self.settings(arguments, environment: Environment.current)
        } catch {
            output.err("Error: \(error.message)\nUsage: baton serve [<options>]\n  See 'baton serve --help'.")
            return .usage
        }
        // Signals are taken by sigwait on this thread: block them before any thread starts.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let endpoints: [WebhookEndpoint]
        let nonceKeyFromFile: [UInt8]?
        let introspectionClients: [IntrospectionClient]
        let previousNonceKey: [UInt8]?
        do {
            endpoints = try webhookEndpoints(settings)
            introspectionClients = try Self.introspectionClients(settings)
            nonceKeyFromFile = try nonceKey(settings)
            previousNonceKey = try previousNonceKeyFromFile(settings)
        } catch {
            output.err("Error: \(error)")
            return .failure
        }
        let listener: Listener
        do { listener = try Listener(address: settings.listen) } catch {
            output.err("Error: \(error)")
            return .failure
        }
        let opened: OpenedStore
        let api: API
        let server: HTTPServer
        let bound: ListenAddress
        let isNewDatabase = !PostgresURI.isPostgres(settings.databasePath) && access(settings.databasePath, F_OK) != 0
        do {
            opened = try openStore(settings)
        } catch {
            listener.close()
            output.err("Error: \(error)")
            return .failure
        }
        let store = opened.store
        let deliverer = startWebhooks(settings, endpoints: endpoints, store: opened.outbox, output: output)
        do {
            var apiOptions = API.Options()
            if let deliverer { apiOptions.moreMetrics = { deliverer.metricsText() } }
            apiOptions.trustedProxies = settings.trustedProxies
            apiOptions.accessLog = settings.accessLog
            apiOptions.signOutMaxAge = settings.signOutMaxAge
            apiOptions.dpop = dpopOptions(settings, nonceKey: nonceKeyFromFile ?? opened.nonceKey, previousNonceKey: previousNonceKey,
                                          now: SystemClock().now())
            apiOptions.introspectionClients = introspectionClients
            apiOptions.authzStepUp = settings.authzStepUp
            apiOptions.identityKeys = KeySetCache(fetcher: HTTPSFetcher(timeout: settings.identityFetchTimeout),
                                                  refetchInterval: settings.identityRefetchInterval)
            api = API(store: store, options: apiOptions)
            var configuration = HTTPServer.Configuration(listen: settings.listen)
            configuration.maxConnections = settings.maxConnections
            configuration.requestTimeout = settings.requestTimeout
            configuration.idleTimeout = settings.idleTimeout
            configuration.workerThreads = settings.workerThreads
            if let loops = settings.eventLoops { configuration.eventLoops = loops }
            server = HTTPServer(configuration: configuration, responder: api)
            bound = try server.start(on: listener)
        } catch {
            deliverer?.stop()
            store.close()
            if let created = opened.createdKeyPath { unlink(created) }  // a key belongs with the database it was made for
            // A database this start created goes too: without its key the next start would refuse it.
            if isNewDatabase { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(settings.databasePath + suffix) } }
            listener.close()
            output.err("Error: \(error)")
            return .failure
        }
        // Once the start has succeeded (a refused start says only why), before "listening".
        if let warning = hostOriginWarning(settings) { output.err(warning) }
        if let warning = exampleDomainWarning(settings) { output.err(warning) }
        for note in opened.notes { output.err(note) }
        let createdKey = opened.createdKeyPath != nil
        output.out(JSONValue.object([
            "event": .string("listening"), "address": .string(bound.description), "db": .string(opened.displayName),
            "version": .string(BatonCommand.version), "key_created": .bool(createdKey), "key_fingerprint": .string(opened.keyFingerprint),
            "event_loops": .int(Int64(settings.eventLoops ?? UsableCPUs.count())),
        ]).text)
        fflush(nil)  // all output streams (Swift 6 forbids touching the global `stdout`)

        // On PostgreSQL every instance with --prune-every prunes; that is safe (Pruner).
        let pruner = settings.pruneEvery.map { Pruner(store: store, every: $0, retention: settings.retention, output: output) }
        let received = waitForStopSignal(&signals, output: output)
        pruner?.stop()
        let stuck = server.shutdown(grace: .seconds(10))
        api.close()
        deliverer?.stop()
        store.close()
        output.out(JSONValue.object(["event": .string("stopped"), "signal": .int(Int64(received)), "connections_cut": .int(Int64(stuck))]).text)
        fflush(nil)  // all output streams (Swift 6 forbids touching the global `stdout`)
        return .success
    }

    /// Waits for SIGTERM or SIGINT and returns it. SIGHUP is logged and ignored: the log is
    /// standard output (journald or a pipe), so there is no file to reopen, and a stray hangup
    /// (a closed terminal, `systemctl reload`) must not take the service down.
    private static func waitForStopSignal(_ signals: inout sigset_t, output: some TextStreams) -> Int32 {
        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            guard received == SIGHUP else { return received }
            output.out(JSONValue.object([
                "event": .string("signal_ignored"), "signal": .int(Int64(received)),
                "detail": .string("SIGHUP does nothing: the log is standard output; stop with SIGTERM"),
            ]).text)
            fflush(nil)
        }
    }
}

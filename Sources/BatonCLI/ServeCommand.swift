import BatonAPI
import BatonCore
import BatonHTTP
import BatonStore
import BatonSync
import Glibc
import Synchronization

/// `baton serve`: opens the database and serves the HTTP API until SIGTERM or SIGINT.
enum ServeCommand {
    static let parser = OptionParser(options: [
        .init(name: "db", valueName: "path", help: "SQLite database, created with schema.sql on first start. (default: ./baton.db)"),
        .init(name: "key-file", valueName: "path", help: "Token MAC key, created (mode 0600) on first start. (default: <db>.key)"),
        .init(name: "listen", valueName: "host:port", help: "Address to listen on; [::1]:8080 for IPv6, port 0 for any. (default: 127.0.0.1:8080)"),
        .init(name: "token-ttl", valueName: "duration", help: "How long a token grants access. (default: 15m)"),
        .init(name: "exchange-window", valueName: "duration", help: "How long after expiry a token may still be exchanged. (default: 7d)"),
        .init(name: "max-session", valueName: "duration", help: "Absolute life of a login's chain. (default: 30d)"),
        .init(name: "retry-grace", valueName: "duration", help: "Lost-response retry grace (R3a); 0 is strict. (default: 10s)"),
        .init(name: "max-chains-per-user", valueName: "n", help: "Live chains per user; a login beyond evicts the oldest; 0: unlimited. (default: 10)"),
        .init(name: "one-chain-per-device-class", valueName: nil, help: "A login revokes the user's live chain of the same device class."),
        .init(name: "trusted-proxy", valueName: "cidr", help: "Proxy whose X-Forwarded-For is believed; repeatable; replaces the default. (default: 127.0.0.1/32, ::1/128)", repeatable: true),
        .init(name: "max-connections", valueName: "n", help: "Open connections at most; more get 503. (default: 1024)"),
        .init(name: "request-timeout", valueName: "duration", help: "Time for a request's head and body to arrive. (default: 10s)"),
        .init(name: "idle-timeout", valueName: "duration", help: "Keep-alive idle time before the server closes. (default: 60s)"),
        .init(name: "worker-threads", valueName: "n", help: "Threads for requests that may block (login, exchange, logout); concurrent exchanges share commits. (default: 256)"),
        .init(name: "max-concurrent-hashes", valueName: "n", help: "Password hashes run at once (bounds login CPU). (default: half the cores)"),
        .init(name: "prune-every", valueName: "duration", help: "Prune ended chains on this schedule (like `baton admin prune`). (default: off)"),
        .init(name: "retention", valueName: "duration", help: "How long ended chains are kept before pruning. (default: 90d)"),
        .init(name: "access-log", valueName: "on|off", help: "One JSON line per request on stdout. (default: on)"),
        .init(name: "help", valueName: nil, help: "Show help information.", environment: false),
    ])

    static var help: String {
        """
        OVERVIEW: Run the Baton HTTP API server.

        Every option can also be set with an environment variable BATON_<OPTION> (for example
        BATON_TOKEN_TTL=5m, BATON_TRUSTED_PROXY=10.0.0.0/8,127.0.0.1/32); options given on
        the command line win. Durations take ms, s, m, h or d: 90s, 15m, 7d.

        USAGE: baton serve [<options>]

        OPTIONS:
        \(parser.helpLines())
          -h, --help                    Show help information.
        """
    }

    /// Everything `serve` needs, validated.
    struct Settings: Equatable {
        var databasePath = "./baton.db"
        var keyPath: String?
        var listen = ListenAddress("127.0.0.1:8080")!
        var policy = Policy()
        var trustedProxies = [CIDR("127.0.0.1/32")!, CIDR("::1/128")!]
        var maxConnections = 1024
        var requestTimeout: Duration = .seconds(10)
        var idleTimeout: Duration = .seconds(60)
        var hashConcurrency: Int?
        var workerThreads = 256
        var pruneEvery: Duration?
        var retention: Duration = .seconds(90 * 86_400)
        var accessLog = true
    }

    /// Parses arguments and environment into settings.
    static func settings(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Settings {
        let (values, positional) = try parser.parse(arguments, environment: environment)
        guard positional.isEmpty else { throw UsageError(message: "Unexpected argument '\(positional[0])'.") }
        var settings = Settings()
        func duration(_ name: String, allowZero: Bool = false) throws(UsageError) -> Duration? {
            guard let text = values[name]?.last else { return nil }
            guard let value = parseDuration(text), allowZero || value > .zero else {
                throw UsageError(message: "Invalid value '\(text)' for '--\(name) <duration>': expected a duration such as 90s, 15m, 7d\(allowZero ? " or 0" : "").")
            }
            return value
        }
        func integer(_ name: String, minimum: Int) throws(UsageError) -> Int? {
            guard let text = values[name]?.last else { return nil }
            guard let value = Int(text), value >= minimum else {
                throw UsageError(message: "Invalid value '\(text)' for '--\(name) <n>': expected a whole number of at least \(minimum).")
            }
            return value
        }
        if let db = values["db"]?.last { settings.databasePath = db }
        settings.keyPath = values["key-file"]?.last
        if let text = values["listen"]?.last {
            guard let address = ListenAddress(text) else {
                throw UsageError(message: "Invalid value '\(text)' for '--listen <host:port>': expected an IP address and port, e.g. 127.0.0.1:8080 or [::1]:8080.")
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
                throw UsageError(message: "Invalid value '\(flag)' for BATON_ONE_CHAIN_PER_DEVICE_CLASS: expected true or false.")
            }
            settings.policy.oneChainPerDeviceClass = on
        }
        if let proxies = values["trusted-proxy"] {
            settings.trustedProxies = []
            for text in proxies {
                guard let cidr = CIDR(text) else {
                    throw UsageError(message: "Invalid value '\(text)' for '--trusted-proxy <cidr>': expected an address or network, e.g. 10.0.0.0/8.")
                }
                settings.trustedProxies.append(cidr)
            }
        }
        if let value = try integer("max-connections", minimum: 1) { settings.maxConnections = value }
        if let value = try duration("request-timeout") { settings.requestTimeout = value }
        if let value = try duration("idle-timeout") { settings.idleTimeout = value }
        settings.hashConcurrency = try integer("max-concurrent-hashes", minimum: 1)
        if let value = try integer("worker-threads", minimum: 1) { settings.workerThreads = value }
        settings.pruneEvery = try duration("prune-every")
        if let value = try duration("retention", allowZero: true) { settings.retention = value }
        if let text = values["access-log"]?.last {
            guard text == "on" || text == "off" else { throw UsageError(message: "Invalid value '\(text)' for '--access-log <on|off>'.") }
            settings.accessLog = text == "on"
        }
        return settings
    }

    /// Runs the server until a signal; returns the exit code.
    static func run(_ arguments: [String], output: some TextStreams) -> BatonCommand.ExitCode {
        if arguments.contains("--help") || arguments.contains("-h") {
            output.out(help)
            return .success
        }
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
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let store: TokenStore
        let api: API
        let server: HTTPServer
        let bound: ListenAddress
        do {
            let key = try KeyFile.load(at: settings.keyPath ?? KeyFile.defaultPath(forDatabase: settings.databasePath), create: true)
            var storeOptions = TokenStore.Options()
            if let hashes = settings.hashConcurrency { storeOptions.hashConcurrency = hashes }
            store = try TokenStore(path: settings.databasePath, key: key, policy: settings.policy, options: storeOptions)
            var apiOptions = API.Options()
            apiOptions.trustedProxies = settings.trustedProxies
            apiOptions.accessLog = settings.accessLog
            api = API(store: store, options: apiOptions)
            var configuration = HTTPServer.Configuration(listen: settings.listen)
            configuration.maxConnections = settings.maxConnections
            configuration.requestTimeout = settings.requestTimeout
            configuration.idleTimeout = settings.idleTimeout
            configuration.workerThreads = settings.workerThreads
            server = HTTPServer(configuration: configuration, responder: api)
            bound = try server.start()
        } catch {
            output.err("Error: \(error)")
            return .failure
        }
        output.out(JSONValue.object([
            "event": .string("listening"), "address": .string(bound.description), "db": .string(settings.databasePath),
            "version": .string(BatonCommand.version),
        ]).text)
        fflush(nil)  // all output streams (Swift 6 forbids touching the global `stdout`)

        let pruner = settings.pruneEvery.map { Pruner(store: store, every: $0, retention: settings.retention, output: output) }
        var received: Int32 = 0
        sigwait(&signals, &received)
        pruner?.stop()
        let stuck = server.shutdown(grace: .seconds(10))
        api.close()
        store.close()
        output.out(JSONValue.object(["event": .string("stopped"), "signal": .int(Int64(received)), "connections_cut": .int(Int64(stuck))]).text)
        fflush(nil)  // all output streams (Swift 6 forbids touching the global `stdout`)
        return .success
    }
}

/// The process environment as a dictionary.
enum Environment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            pointer += 1
        }
        return result
    }
}

/// Prunes ended chains on a schedule, on its own thread, until stopped.
final class Pruner: Sendable {
    private let lock = ConditionLock()
    private let stopped = Atomic<Bool>(false)

    init(store: TokenStore, every interval: Duration, retention: Duration, output: some TextStreams) {
        spawn { [self] in
            while true {
                let stop = lock.withLock { () -> Bool in
                    if !stopped.load(ordering: .acquiring) { lock.wait(milliseconds: Int(interval.wholeMilliseconds)) }
                    return stopped.load(ordering: .acquiring)
                }
                if stop { return }
                do throws(BatonError) {
                    let removed = try store.prune(olderThan: retention)
                    output.out(JSONValue.object([
                        "event": .string("pruned"), "chains": .int(Int64(removed.chains)), "lineage_rows": .int(Int64(removed.lineageRows)),
                        "audit_events": .int(Int64(removed.auditEvents)),
                    ]).text)
                } catch {
                    output.err("Error: pruning failed: \(error.message)")
                }
            }
        }
    }

    func stop() {
        lock.withLock {
            stopped.store(true, ordering: .releasing)
            lock.broadcast()
        }
    }
}

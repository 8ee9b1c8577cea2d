import BatonCore
import BatonOperations
import BatonPostgres
import BatonStorage
import BatonStore
import BatonWebhooks
import Glibc

extension ServeCommand {
    /// The store `serve` runs on, chosen once at start by the form of `--db`: a
    /// `postgresql://` or `postgres://` URI opens PostgreSQL, anything else is a SQLite file.
    struct OpenedStore {
        /// The store, for the API and for the pruner.
        var store: any LineageStore & AdminStore
        /// The same store's outbox, for the webhook deliverer.
        var outbox: any WebhookOutbox
        /// The key file this start created (removed again if the start fails).
        var createdKeyPath: String?
        /// `--db` as it may be shown (no password).
        var displayName: String
        /// The key's fingerprint, first 16 hex digits (the `listening` line shows it).
        var keyFingerprint: String
        /// What the start says about the database once it succeeded (PostgreSQL's durability).
        var notes: [String] = []
        /// The DPoP nonce key derived from the token key (`dpopNonceLabel`): every instance
        /// sharing the token key accepts every other's nonces.
        var nonceKey: [UInt8]
    }

    /// The fixed label of the DPoP nonce key's derivation from the token key.
    static let dpopNonceLabel = "baton dpop nonce key v1"

    /// Opens the store `settings` name, with its key.
    /// - Throws: a message naming the flag, the file or the address (never a password).
    static func openStore(_ settings: Settings) throws(StoreOpenFailure) -> OpenedStore {
        if PostgresURI.isPostgres(settings.databasePath) { return try openPostgres(settings) }
        let keyPath = settings.keyPath ?? KeyFile.defaultPath(forDatabase: settings.databasePath)
        var created = false
        do {
            try KeyFile.checkDirectory(ofDatabase: settings.databasePath)
            let (key, wasCreated) = try KeyFile.load(at: keyPath, forDatabase: settings.databasePath, allowNewKey: settings.allowNewKey)
            created = wasCreated
            var options = TokenStore.Options()
            if let hashes = settings.hashConcurrency { options.hashConcurrency = hashes }
            if let rows = settings.verifyMemoryRows { options.rememberedRows = rows }
            options.keyFilePath = keyPath
            options.replacesRecordedKey = settings.allowNewKey
            let store = try TokenStore(path: settings.databasePath, key: key, policy: settings.policy, options: options)
            store.limits.proofFailures.window = settings.dpopAuditWindow
            store.limits.proofRefusals.configure(burst: settings.dpopRefusalBurst, perSecond: settings.dpopRefusalRate)
            return OpenedStore(store: store, outbox: store, createdKeyPath: created ? keyPath : nil, displayName: settings.databasePath,
                               keyFingerprint: key.shortFingerprint, nonceKey: key.derivedKey(label: dpopNonceLabel))
        } catch {
            if created { unlink(keyPath) }  // a key belongs with the database it was made for
            throw StoreOpenFailure(message: error.description)
        }
    }

    /// PostgreSQL: every instance sharing the database must read the same key, so the key file
    /// is named explicitly and never created behind the operator's back (only `--new-key`).
    private static func openPostgres(_ settings: Settings) throws(StoreOpenFailure) -> OpenedStore {
        let address = PostgresURI.redacted(settings.databasePath)
        guard let keyPath = settings.keyPath else {
            throw StoreOpenFailure(message: """
                --key-file (or BATON_KEY_FILE) is required when --db is a PostgreSQL URI (\(address)): \
                every instance sharing the database must read the same key file
                """)
        }
        let exists = access(keyPath, F_OK) == 0
        guard exists || settings.allowNewKey else {
            throw StoreOpenFailure(message: """
                key file \(keyPath) is missing: every instance sharing PostgreSQL database \(address) must read \
                the same key; copy it from another instance, or create it once with --new-key (tokens \
                issued under another key stop working)
                """)
        }
        do {
            let (key, created) = try KeyFile.loadReporting(at: keyPath, create: !exists)
            var options = PostgresStore.Options()
            if let hashes = settings.hashConcurrency { options.hashConcurrency = hashes }
            options.poolSize = settings.databaseConnections
            if let rows = settings.verifyMemoryRows { options.rememberedRows = rows }
            options.keyFilePath = keyPath
            options.replacesRecordedKey = settings.allowNewKey
            // Acknowledged means durable (docs/reliability.md, "Power cuts"): a cluster that may
            // lose acknowledged commits is refused before anything is written, unless declared a throwaway.
            options.refusesUndurableCluster = !settings.allowsUnsafePostgres
            do {
                let store = try PostgresStore(uri: settings.databasePath, key: key, policy: settings.policy, options: options)
                let durability = try store.durability()
                store.limits.proofFailures.window = settings.dpopAuditWindow
                store.limits.proofRefusals.configure(burst: settings.dpopRefusalBurst, perSecond: settings.dpopRefusalRate)
                var opened = OpenedStore(store: store, outbox: store, createdKeyPath: created ? keyPath : nil, displayName: address,
                                         keyFingerprint: key.shortFingerprint, nonceKey: key.derivedKey(label: dpopNonceLabel))
                opened.notes = durability.notes + (durability.refusal.map { ["Warning: started with --unsafe-postgres-durability: " + $0] } ?? [])
                return opened
            } catch {
                if created { unlink(keyPath) }  // only a key this start made, never another process's
                throw StoreOpenFailure(message: error.description)
            }
        } catch let error as StoreOpenFailure {
            throw error
        } catch {
            throw StoreOpenFailure(message: "\(error)")
        }
    }
}

/// Why `serve` could not open its store: the message to print after `Error: `.
struct StoreOpenFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

extension ServeCommand {
    /// Each `--webhook` with its secret read, before the store is opened (a refused secret
    /// file must not leave a new database behind).
    /// - Throws: a message naming the secret file that could not be used.
    static func webhookEndpoints(_ settings: Settings) throws(StoreOpenFailure) -> [WebhookEndpoint] {
        var endpoints: [WebhookEndpoint] = []
        for webhook in settings.webhooks {
            do throws(WebhookSecretError) {
                endpoints.append(WebhookEndpoint(url: webhook.url, secrets: try WebhookSecret.loadAll(from: webhook.secretFile), types: webhook.types))
            } catch {
                throw StoreOpenFailure(message: error.description)
            }
        }
        return endpoints
    }

    /// Starts the deliverer for `endpoints`; nil without `--webhook`.
    static func startWebhooks(_ settings: Settings, endpoints: [WebhookEndpoint], store: any WebhookOutbox, output: some TextStreams) -> WebhookDeliverer? {
        guard !endpoints.isEmpty else { return nil }
        var options = WebhookDeliverer.Options()
        options.retry.period = settings.webhookRetryPeriod
        options.timeout = settings.webhookTimeout
        options.caFile = settings.webhookCAFile
        options.retry.initialDelay = settings.webhookBackoff
        options.retry.maximumDelay = settings.webhookMaxBackoff
        return WebhookDeliverer(outbox: store, endpoints: endpoints, options: options, clock: SystemClock()) { line in
            output.err(line)
        }
    }
}

import BatonCore
import BatonPostgres
import BatonStorage
import BatonStore

/// `baton admin key list`, `key rotate` and `key retire`: the token key ring (docs/admin.md,
/// "Rotating the token key"). Each opens the store with the key file's key, checked against
/// the database's fingerprint as `baton serve` checks it.
enum KeyCommands {
    static let keyFile = OptionParser.Option(
        name: "key-file", valueName: "path",
        help: "The key file the server reads (default: <db>.key; required for PostgreSQL; or BATON_KEY_FILE)")

    static let all: [Subcommand] = [
        Subcommand(
            path: "key list", overview: "Show each token key: fingerprint, age, state and the live chains holding a token of it.",
            discussion: """
                Key 0 is the key file's own key (the `bt1_` tokens); keys 1 and up were added by
                `baton admin key rotate`. The minting key makes every new token; a verifying key's
                tokens are still accepted, and each live chain moves to the minting key at its
                next exchange; a retired key's tokens are refused.
                """,
            usage: "[--db <path>] [--key-file <path>]", options: [AdminCommand.database, keyFile] + ChainCommands.policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            return invocation.withKeyRing(policy: policy) { store throws(BatonError) in
                invocation.output.out(keyTable(try store.keyStatuses(), now: SystemClock().now()))
                return .success
            }
        },
        Subcommand(
            path: "key rotate", overview: "Add a token key that every instance makes new tokens with from now on.",
            discussion: """
                Nobody is logged out: tokens of the older keys keep verifying and exchanging,
                and each exchange issues the successor under the new key. Every running
                instance (SQLite or PostgreSQL) makes new tokens with the new key within 2
                seconds, without a restart. The new key is stored in the database wrapped under
                the key file's key: back up the database and the key file as before.
                """,
            usage: "[--db <path>] [--key-file <path>]", options: [AdminCommand.database, keyFile]
        ) { invocation in
            invocation.withKeyRing(policy: Policy()) { store throws(BatonError) in
                let row = try store.rotateKey(context: .admin)
                invocation.output.out("Added token key \(row.id) (fingerprint \(row.fingerprint.prefix(16))): new tokens use it from now on.")
                return .success
            }
        },
        Subcommand(
            path: "key retire", overview: "Refuse the tokens of a token key from now on.",
            discussion: """
                Refused while live chains still hold a token of the key (each moves to the
                newest key at its next exchange; see `baton admin key list`), unless --force,
                which revokes those chains (reason key_retired: their users log in again). The
                minting key cannot be retired (rotate first), nor a key superseded less than 5
                seconds ago (an instance may still make tokens with it).
                """,
            usage: "<key-id> [--force] [--db <path>] [--key-file <path>]",
            arguments: [("<key-id>", "The key's number, as `baton admin key list` shows it.")],
            options: [.init(name: "force", valueName: nil, help: "Revoke the live chains that hold a token of the key.", environment: false),
                      AdminCommand.database, keyFile] + ChainCommands.policyOptions,
            positionalCount: 1
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            guard let id = UInt32(invocation.positional[0]) else {
                return invocation.usageError("Invalid value '\(invocation.positional[0])' for '<key-id>': expected a key number such as 1 (see 'baton admin key list').")
            }
            return invocation.withKeyRing(policy: policy) { store throws(BatonError) in
                let revoked = try store.retireKey(id, force: invocation.flag("force"), context: .admin)
                invocation.output.out("Retired token key \(id): its tokens are refused by every instance within 2 s"
                    + (revoked.isEmpty ? "." : "; revoked \(plural(revoked.count, "chain")) (key_retired)."))
                return .success
            }
        },
    ]

    /// `key list`'s table.
    static func keyTable(_ statuses: [TokenKeyStatus], now: Instant) -> String {
        table(["KEY", "FINGERPRINT", "CREATED", "AGE", "STATE", "LIVE CHAINS"], statuses.map { status in
            let state = status.row.retiredAt.map { "retired \($0.rfc3339)" } ?? (status.isMinting ? "minting" : "verifying")
            return [String(status.row.id), String(status.row.fingerprint.prefix(16)), status.row.createdAt.rfc3339,
                    age(from: status.row.createdAt, to: now), state, String(status.liveChains)]
        })
    }

    /// `3d 4h`, `5h 12m`, `12m 5s`, `40s`: the two largest units.
    static func age(from start: Instant, to now: Instant) -> String {
        let seconds = max(0, (now.milliseconds - start.milliseconds) / 1000)
        let (days, hours, minutes) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60)
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)m" }
        if minutes > 0 { return "\(minutes)m \(seconds % 60)s" }
        return "\(seconds)s"
    }
}

extension Invocation {
    /// Opens the store `--db` names with the key file's key (`--key-file`; default `<db>.key`
    /// for SQLite, required for PostgreSQL), checked against the database's fingerprint, runs
    /// `body`, closes it. The database must exist.
    func withKeyRing(policy: Policy, _ body: (any KeyRingStore) throws(BatonError) -> BatonCommand.ExitCode) -> BatonCommand.ExitCode {
        let isPostgres = PostgresURI.isPostgres(databasePath)
        guard let keyPath = value("key-file") ?? (isPostgres ? nil : KeyFile.defaultPath(forDatabase: databasePath)) else {
            return usageError("--key-file (or BATON_KEY_FILE) is required when --db is a PostgreSQL URI: the key file every instance reads.")
        }
        let store: any KeyRingStore & AdminStore
        do {
            if isPostgres {
                var options = PostgresStore.Options()
                options.createSchema = false
                options.watchesHeads = false  // a command's changes wait out HeadWatch.bound instead
                options.keyFilePath = keyPath
                let key = try KeyFile.load(at: keyPath, create: false)
                store = try PostgresStore(uri: databasePath, key: key, policy: policy, options: options)
            } else {
                var options = TokenStore.Options()
                options.create = false
                options.keyFilePath = keyPath
                let key = try KeyFile.load(at: keyPath, create: false)
                store = try TokenStore(path: databasePath, key: key, policy: policy, options: options)
            }
        } catch {
            return failure("\(error)")
        }
        defer { store.close() }
        do { return try body(store) } catch {
            return failure(error.detail)
        }
    }
}

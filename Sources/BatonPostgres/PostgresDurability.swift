/// Whether the PostgreSQL cluster's acknowledged commits survive a power cut, as Baton's
/// answers promise (docs/reliability.md, "Power cuts"). Read at `baton serve`'s start.
///
/// Cluster settings Baton cannot change for its own sessions (`fsync`, `full_page_writes`):
/// off, a commit PostgreSQL acknowledged can be lost, or pages torn, by a power cut, so the
/// start is refused unless the operator says the cluster is a throwaway
/// (`--unsafe-postgres-durability`). `synchronous_commit` is a session setting: each of
/// Baton's connections raises `off` and `local` (never right for Baton, docs/scale.md) to `on`
/// (`sessionSetting`), so a commit Baton acknowledges was flushed locally and, with a
/// synchronous standby configured, on the standby too; the start says so. `remote_write` (a
/// trade docs/scale.md allows) and the stronger `on` and `remote_apply` are kept.
package struct PostgresDurability: Sendable, Equatable {
    /// `fsync`, `full_page_writes`: `on` or `off`.
    package var fsync: String
    package var fullPageWrites: String
    /// `synchronous_commit` as configured (what a new session starts with) and as Baton's
    /// connections have it.
    package var configuredSynchronousCommit: String
    package var sessionSynchronousCommit: String
    /// `synchronous_standby_names`: empty when no commit waits for a standby.
    package var synchronousStandbyNames: String

    package init(fsync: String, fullPageWrites: String, configuredSynchronousCommit: String, sessionSynchronousCommit: String,
                 synchronousStandbyNames: String) {
        self.fsync = fsync
        self.fullPageWrites = fullPageWrites
        self.configuredSynchronousCommit = configuredSynchronousCommit
        self.sessionSynchronousCommit = sessionSynchronousCommit
        self.synchronousStandbyNames = synchronousStandbyNames
    }

    /// The statement every connection of Baton's runs first: `synchronous_commit` raised to `on`
    /// from `off` or `local`; `remote_write`, `on` and `remote_apply` are kept.
    package static let sessionSetting =
        "SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') IN ('off', 'local')"

    static let query = """
        SELECT current_setting('fsync'), current_setting('full_page_writes'),
               (SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'),
               current_setting('synchronous_commit'), current_setting('synchronous_standby_names')
        """

    /// Why the cluster may lose a commit it acknowledged; nil when it may not.
    package var refusal: String? {
        var unsafe: [String] = []
        if fsync != "on" { unsafe.append("fsync = \(fsync)") }
        if fullPageWrites != "on" { unsafe.append("full_page_writes = \(fullPageWrites)") }
        guard !unsafe.isEmpty else { return nil }
        return "PostgreSQL runs with \(unsafe.joined(separator: " and ")): a power cut can lose or tear commits it acknowledged, "
            + "so an exchange Baton acknowledged could be forgotten and its user logged out as a thief. Set \(unsafe.count == 1 ? "it" : "them") "
            + "to on in postgresql.conf (docs/reliability.md, \"Power cuts\"), or start with --unsafe-postgres-durability for a throwaway cluster."
    }

    /// What the start says about the settings it raised or cannot check.
    package var notes: [String] {
        var notes: [String] = []
        if configuredSynchronousCommit != sessionSynchronousCommit {
            notes.append("Note: PostgreSQL's synchronous_commit is \(configuredSynchronousCommit); Baton's connections use \(sessionSynchronousCommit), "
                + "so that every commit it acknowledges was flushed\(synchronousStandbyNames.isEmpty ? "" : " and reached the synchronous standby").")
        }
        return notes
    }
}

extension PostgresDurability {
    /// The settings as `connection` (one of Baton's, its session setting applied) sees them.
    static func read(_ connection: PostgresConnection) throws(PostgresError) -> PostgresDurability {
        let row = try connection.query(query).first ?? []
        let value = { (index: Int) in index < row.count ? row[index] ?? "" : "" }
        return PostgresDurability(fsync: value(0), fullPageWrites: value(1), configuredSynchronousCommit: value(2),
                                  sessionSynchronousCommit: value(3), synchronousStandbyNames: value(4))
    }
}

extension PostgresStore {
    /// The cluster's durability settings, read on one of the store's own connections.
    package func durability() throws(PostgresStoreError) -> PostgresDurability {
        do {
            return try pool.withConnection { connection throws(PostgresError) in try PostgresDurability.read(connection) }
        } catch {
            throw .unreachable(address: address, error)
        }
    }
}

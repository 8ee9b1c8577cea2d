import BatonCore
import BatonPostgres
import BatonStorage
import BatonStore

/// `baton admin migrate --to postgresql://…`: copies a SQLite deployment into PostgreSQL.
enum MigrateCommand {
    static let subcommand = Subcommand(
        path: "migrate", overview: "Copy the SQLite database's users, chains, lineage and audit into PostgreSQL.",
        discussion: """
            Reads --db in one snapshot and writes it into the PostgreSQL database --to
            names, in one transaction, keeping every id; then checks each table's count.
            Refuses a PostgreSQL database that already has users, chains or audit events.
            Stop the server first. Tokens issued before the move keep working when every
            instance starts with --key-file pointing at the SQLite database's key file.
            """,
        usage: "--to <uri> [--db <path>]",
        options: [.init(name: "to", valueName: "uri", help: "The PostgreSQL database (postgresql://…, libpq syntax).", environment: false),
                  AdminCommand.database]
    ) { invocation in
        guard let target = invocation.value("to") else { return invocation.usageError("Missing '--to <uri>'.") }
        guard PostgresURI.isPostgres(target) else {
            return invocation.usageError("Invalid value '\(PostgresURI.redacted(target))' for '--to <uri>': expected a postgresql:// or postgres:// URI.")
        }
        guard !PostgresURI.isPostgres(invocation.databasePath) else {
            return invocation.usageError("--db must be the SQLite database to copy from.")
        }
        return invocation.withStore(readOnly: true) { source throws(BatonError) in
            let tables = try source.dump()
            let destination: PostgresStore
            do throws(PostgresStoreError) { destination = try PostgresStore(uri: target, key: nil, options: {
                var options = PostgresStore.Options()
                options.watchesHeads = false  // its one transaction waits out HeadWatch.bound instead
                return options
            }()) } catch { throw .unavailable(error.description) }
            defer { destination.close() }
            let counts = try destination.importDump(tables)
            invocation.output.out("""
                Copied \(counts.users) users, \(counts.chains) chains, \(counts.lineageRows) lineage rows and \(counts.auditEvents) audit events \
                from \(invocation.databasePath) to \(destination.address); counts checked.
                Start every instance with --db \(destination.address) --key-file \(KeyFile.defaultPath(forDatabase: invocation.databasePath)) (or a copy of that key).
                """)
            return .success
        }
    }
}

import BatonPostgres
import BatonStorage
import BatonStore
import Glibc

/// `baton admin backup`: an online, durable copy of the SQLite database and its key file
/// (docs/deploy.md, "Backup and restore").
enum BackupCommand {
    static let subcommand = Subcommand(
        path: "backup", overview: "Copy the database (and its key file) online, durably.",
        discussion: """
            Copies the SQLite database as of one moment (SQLite's online backup: the server \
            keeps serving) to --to, checks the copy (PRAGMA quick_check), and gives it that name \
            durably: written to a temporary file in the same directory, fsynced, renamed over \
            any file there, and the directory fsynced, so a power cut leaves the previous file \
            or this one, whole. --key-to copies the key file the same way. Both are mode 0600. \
            Reads the database only: run it as root. On PostgreSQL, back up with PostgreSQL's \
            own tools (docs/scale.md).
            """,
        usage: "--to <file> [--key-to <file>] [--key-file <path>] [--db <path>]",
        options: [.init(name: "to", valueName: "file", help: "Where the copy goes (replaced if present).", environment: false),
                  .init(name: "key-to", valueName: "file", help: "Also copy the key file there.", environment: false),
                  .init(name: "key-file", valueName: "path", help: "The key file to copy. (default: <db>.key)"),
                  AdminCommand.database]
    ) { invocation in
        guard let destination = invocation.value("to") else { return invocation.usageError("Missing '--to <file>': where the copy goes.") }
        guard !PostgresURI.isPostgres(invocation.databasePath) else {
            return invocation.usageError("backup copies a SQLite database; back up PostgreSQL with its own tools (pg_basebackup, pg_dump; docs/scale.md).")
        }
        let source = invocation.databasePath
        do throws(StoreError) {
            let result = try DatabaseBackup.copy(database: source, to: destination)
            invocation.output.out("Backed up \(TerminalText.escape(source)) to \(TerminalText.escape(destination)) (\(result.bytes) bytes, checked).")
            if let keyCopy = invocation.value("key-to") {
                let key = invocation.value("key-file") ?? KeyFile.defaultPath(forDatabase: source)
                try DatabaseBackup.copyKey(key, to: keyCopy)
                invocation.output.out("Copied the key file \(TerminalText.escape(key)) to \(TerminalText.escape(keyCopy)).")
            }
            return .success
        } catch {
            return invocation.failure(error.description)
        }
    }
}

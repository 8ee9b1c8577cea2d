import BatonCore
import BatonOperations
import BatonStorage

/// Why a store could not be opened or used, as opposed to a rule's answer (`BatonError`).
package enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not exist and creation was not asked for.
    case databaseMissing(String)
    /// The file has tables but no Baton schema version.
    case notABatonDatabase(String)
    /// The file's `user_version` is not one this build knows.
    case unknownSchemaVersion(found: Int64, supported: Int64)
    /// An older database (version 1 or 2) opened read-only: it must be migrated first (thrown
    /// by `Schema.check`; `TokenStore` then migrates it when it can write it).
    case olderVersion(String, found: Int64)
    /// An older database that a read-only command cannot migrate: the file or its directory
    /// is not writable.
    case olderVersionNotWritable(String, found: Int64)
    /// The key file is missing, malformed, or readable by others.
    case keyFile(String)
    /// The key file is missing next to a database that has users or chains: a new key would
    /// silently invalidate every token while the chains still look live.
    case keyMissing(keyPath: String, databasePath: String)
    /// The key file's fingerprint is not the one the database recorded: it was used with
    /// another key, whose tokens this one would all reject (`TokenKey.fingerprint`).
    case keyMismatch(keyPath: String, databasePath: String, recorded: String, presented: String)
    /// A file is to be created in a directory that does not exist; `check` names the options
    /// that chose the path.
    case directoryMissing(String, file: String, check: String)
    /// SQLite failed on this file.
    case sqlite(SQLiteError, path: String)
    /// `baton admin backup` could not write or sync its copy (the message names the file).
    case backup(String)
    /// Verify's memory (`SharedHeadTable`, `rows` rows) could not be mapped (`errno`).
    case verifyMemory(rows: Int, errno: Int32)

    package var description: String {
        switch self {
        case .databaseMissing(let path): "database \(path) not found (create it with `baton admin user add`, or check --db / BATON_DB)"
        case .notABatonDatabase(let path): "\(path) is not a Baton database (it has no Baton schema version)"
        case .unknownSchemaVersion(let found, let supported):
            "database schema version \(found) is unknown to this baton (it uses version \(supported) and migrates versions 1 to \(supported - 1) in place; a newer baton may have written this file)"
        case .olderVersion(let path, let found):
            "database \(path) has schema version \(found); open it read-write once to migrate it to version \(Schema.version)"
        case .olderVersionNotWritable(let path, let found):
            """
            database \(path) has schema version \(found) (an earlier baton's) and cannot be migrated here: \
            the file or its directory is not writable. Copy it somewhere writable and run any \
            `baton admin` command on the copy, or `baton serve` on it: either migrates it to version \(Schema.version) in place.
            """
        case .keyFile(let text), .backup(let text): text
        case .keyMissing(let keyPath, let databasePath):
            """
            key file \(keyPath) is missing, but database \(databasePath) has users or chains: \
            a new key would make every issued token invalid. Restore the key file from the backup \
            taken with the database (docs/admin.md, "The key file"). If the key is lost for good, start \
            once with --new-key: every user must log in again.
            """
        case .keyMismatch(let keyPath, let databasePath, let recorded, let presented):
            KeyCheck.mismatchMessage(keyPath: keyPath, database: databasePath, recorded: recorded, presented: presented,
                                     restore: "restore it from the backup taken with the database")
        case .directoryMissing(let directory, let file, let check):
            "directory \(directory) (of \(file)) does not exist: create it first (mkdir -p \(directory)), or check \(check)"
        case .sqlite(let error, let path): error.explanation(path: path)
        case .verifyMemory(let rows, let errno): SharedHeadTable.mappingMessage(rows: rows, errno: errno)
        }
    }
}


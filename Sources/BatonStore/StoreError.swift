import BatonCore

/// Why a store could not be opened or used, as opposed to a rule's answer (`BatonError`).
package enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not exist and creation was not asked for.
    case databaseMissing(String)
    /// The file has tables but no Baton schema version.
    case notABatonDatabase(String)
    /// The file's `user_version` is not one this build knows.
    case unknownSchemaVersion(found: Int64, supported: Int64)
    /// A version-1 database opened read-only: it must be migrated first (thrown by
    /// `Schema.check`; `TokenStore` then migrates it when it can write it).
    case versionOne(String)
    /// A version-1 database that a read-only command cannot migrate: the file or its
    /// directory is not writable.
    case versionOneNotWritable(String)
    /// The key file is missing, malformed, or readable by others.
    case keyFile(String)
    /// The key file is missing next to a database that has users or chains: a new key would
    /// silently invalidate every token while the chains still look live.
    case keyMissing(keyPath: String, databasePath: String)
    /// SQLite failed on this file.
    case sqlite(SQLiteError, path: String)

    package var description: String {
        switch self {
        case .databaseMissing(let path): "database \(path) not found (create it with `baton admin user add`, or check --db / BATON_DB)"
        case .notABatonDatabase(let path): "\(path) is not a Baton database (it has no Baton schema version)"
        case .unknownSchemaVersion(let found, let supported):
            "database schema version \(found) is unknown to this baton (it uses version \(supported) and migrates version 1 in place; a newer baton may have written this file)"
        case .versionOne(let path):
            "database \(path) has schema version 1; open it read-write once to migrate it to version \(Schema.version)"
        case .versionOneNotWritable(let path):
            """
            database \(path) has schema version 1 (an earlier baton's) and cannot be migrated here: \
            the file or its directory is not writable. Copy it somewhere writable and run any \
            `baton admin` command on the copy, or `baton serve` on it: either migrates it to version \(Schema.version) in place.
            """
        case .keyFile(let text): text
        case .keyMissing(let keyPath, let databasePath):
            """
            key file \(keyPath) is missing, but database \(databasePath) has users or chains: \
            a new key would make every issued token invalid. Restore the key file from the backup \
            taken with the database (docs/admin.md, "The key file"). If the key is lost for good, start \
            once with --new-key: every user must log in again.
            """
        case .sqlite(let error, let path): error.explanation(path: path)
        }
    }
}

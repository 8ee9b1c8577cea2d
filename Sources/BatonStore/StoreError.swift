import BatonCore

/// Why a store could not be opened or used, as opposed to a rule's answer (`BatonError`).
package enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not exist and creation was not asked for.
    case databaseMissing(String)
    /// The file has tables but no Baton schema version.
    case notABatonDatabase(String)
    /// The file's `user_version` is not one this build knows.
    case unknownSchemaVersion(found: Int64, supported: Int64)
    /// The key file is missing, malformed, or readable by others.
    case keyFile(String)
    /// SQLite failed.
    case sqlite(SQLiteError)

    package var description: String {
        switch self {
        case .databaseMissing(let path): "database not found: \(path)"
        case .notABatonDatabase(let path): "\(path) is not a Baton database (it has tables but no Baton schema version)"
        case .unknownSchemaVersion(let found, let supported):
            "database schema version \(found) is not supported (this baton supports version \(supported))"
        case .keyFile(let text): text
        case .sqlite(let error): error.description
        }
    }
}

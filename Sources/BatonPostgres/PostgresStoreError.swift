import BatonOperations
import BatonStorage

/// Why the PostgreSQL store could not be opened. Messages name the address without its password.
package enum PostgresStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No connection could be made (or the schema could not be created).
    case unreachable(address: String, PostgresError)
    /// The database holds a Baton schema of another version.
    case unknownSchemaVersion(address: String, found: Int64)
    /// The database has no Baton tables, and this command does not create them.
    case noSchema(address: String)
    /// The key file's fingerprint is not the one the database records (`KeyCheck.refuse`).
    case keyMismatch(keyPath: String, address: String, recorded: String, presented: String)
    /// Verify's memory (`SharedHeadTable`, `rows` rows) could not be mapped (`errno`).
    case verifyMemory(rows: Int, errno: Int32)
    /// The cluster may lose commits it acknowledged (`PostgresDurability.refusal`, the message).
    case notDurable(String)

    package var description: String {
        switch self {
        case .unreachable(let address, let error):
            "cannot use PostgreSQL database \(address): \(error.message) (check --db / BATON_DB)"
        case .unknownSchemaVersion(let address, let found):
            "PostgreSQL database \(address) has Baton schema version \(found); this baton uses version \(PostgresSchema.version)"
        case .keyMismatch(let keyPath, let address, let recorded, let presented):
            KeyCheck.mismatchMessage(keyPath: keyPath, database: address, recorded: recorded, presented: presented,
                                     restore: "copy it from another instance")
        case .verifyMemory(let rows, let errno):
            SharedHeadTable.mappingMessage(rows: rows, errno: errno)
        case .notDurable(let refusal):
            refusal
        case .noSchema(let address):
            "PostgreSQL database \(address) has no Baton tables (create them with `baton admin user add` or `baton serve`, or check --db / BATON_DB)"
        }
    }
}

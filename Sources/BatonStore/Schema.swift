import BatonCore
import CSQLite

/// The database schema: exactly the text of the top-level schema.sql, embedded at build time.
package enum Schema {
    /// The `PRAGMA user_version` this build reads and writes.
    package static let version: Int64 = 1

    /// schema.sql's text.
    package static let sql = String(decoding: PackageResources.schema_sql, as: UTF8.self)

    /// Checks the version of a database opened read-only (nothing is created).
    /// - Throws: `StoreError` for an empty file, another version or another application.
    package static func check(_ connection: Connection) throws(StoreError) {
        let found: Int64
        do { found = try connection.statement("PRAGMA user_version").first { $0.int(0) } ?? 0 } catch {
            throw .sqlite(error, path: connection.path)
        }
        guard found != 0 else { throw .notABatonDatabase(connection.path) }
        guard found == version else { throw .unknownSchemaVersion(found: found, supported: version) }
    }

    /// Creates the schema in an empty database, or checks an existing one's version.
    /// - Throws: `SchemaError` for a database of another version or another application.
    package static func prepare(_ connection: Connection) throws(StoreError) {
        do {
            try connection.transaction { () throws(SQLiteError) in
                let version = try connection.statement("PRAGMA user_version").first { $0.int(0) } ?? 0
                if version == 0 {
                    let objects = try connection.statement("SELECT count(*) FROM sqlite_master").first { $0.int(0) } ?? 0
                    guard objects == 0 else { throw SQLiteError(code: SQLITE_NOTADB, message: "notBaton") }
                    try connection.execute(sql)
                }
            }
        } catch let error where error.message == "notBaton" {
            throw .notABatonDatabase(connection.path)
        } catch {
            throw .sqlite(error, path: connection.path)
        }
        let found = (try? connection.statement("PRAGMA user_version").first { $0.int(0) }) ?? 0
        guard found == version else { throw .unknownSchemaVersion(found: found, supported: version) }
    }
}

import BatonCore
import CSQLite
import Glibc

/// The database schema: exactly the text of the top-level schema.sql, embedded at build time.
package enum Schema {
    /// The `PRAGMA user_version` this build reads and writes.
    package static let version: Int64 = 12

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
        guard !SchemaMigration.migrates(found) else { throw .olderVersion(connection.path, found: found) }
        guard found == version else { throw .unknownSchemaVersion(found: found, supported: version) }
    }

    /// Migrates the older (version 1 to 11) database at `path` in place, for a command that
    /// then reads it read-only: opens it read-write once and runs `prepare`.
    /// - Throws: `.olderVersionNotWritable` when the file or its directory cannot be written
    ///   (a 0444 backup copy, a read-only directory); `StoreError` when the migration fails.
    package static func migrateOlderVersion(at path: String, found: Int64, busyTimeout: Duration) throws(StoreError) {
        // The write needs the file and, for the -wal and -shm files, its directory.
        guard isMeantToBeWritten(path), isMeantToBeWritten(KeyFile.directory(of: path)) else {
            throw .olderVersionNotWritable(path, found: found)
        }
        var options = Connection.Options()
        options.create = false
        options.busyTimeout = busyTimeout
        let connection: Connection
        do { connection = try Connection(path: path, options: options) } catch { throw .sqlite(error, path: path) }
        defer { connection.close() }
        try prepare(connection)
    }

    /// Creates the schema in an empty database, migrates a version-1 to -11 database in place,
    /// or checks an existing one's version.
    /// - Throws: `StoreError` for a database of another version or another application, or a
    ///   migration that failed (then rolled back: the file is left as it was).
    package static func prepare(_ connection: Connection) throws(StoreError) {
        do {
            // lang_altertable.html §7: "If foreign key constraints are enabled, disable them
            // using PRAGMA foreign_keys=OFF" before the transaction (the pragma is a no-op
            // inside one). Otherwise dropping the rebuilt `chains` would cascade into `tokens`.
            try connection.execute("PRAGMA foreign_keys = OFF")
            try connection.transaction { () throws(SQLiteError) in
                let version = try connection.statement("PRAGMA user_version").first { $0.int(0) } ?? 0
                switch version {
                case 0:
                    let objects = try connection.statement("SELECT count(*) FROM sqlite_master").first { $0.int(0) } ?? 0
                    guard objects == 0 else { throw SQLiteError(code: SQLITE_NOTADB, message: "notBaton") }
                    try connection.execute(sql)
                case let older where SchemaMigration.migrates(older):
                    try SchemaMigration.migrate(connection, from: older, to: sql)
                default:
                    break  // the current version, or one refused below
                }
            }
            try connection.execute("PRAGMA foreign_keys = ON")
        } catch let error where error.message == "notBaton" {
            throw .notABatonDatabase(connection.path)
        } catch {
            throw .sqlite(error, path: connection.path)
        }
        let found = (try? connection.statement("PRAGMA user_version").first { $0.int(0) }) ?? 0
        guard found == version else { throw .unknownSchemaVersion(found: found, supported: version) }
    }

    /// Whether this process may write `path` and its mode has a write bit at all: root may
    /// write anything, but a 0444 backup copy is left as it is even then.
    private static func isMeantToBeWritten(_ path: String) -> Bool {
        var status = stat()
        guard access(path, W_OK) == 0, stat(path, &status) == 0 else { return false }
        return status.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH) != 0
    }
}

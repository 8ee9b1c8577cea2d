import BatonCore
import Glibc

extension KeyFile {
    /// The key of the database at `databasePath`. A missing key is created only together with a
    /// new or empty database (no users, no chains), or when `allowNewKey` (`serve --new-key`).
    /// - Returns: the key, and whether this call created its file.
    /// - Throws: `.keyMissing` for a database with users, chains or a recorded key and no key
    ///   file; `.keyFile`; `.directoryMissing`; `.sqlite`.
    package static func load(at keyPath: String, forDatabase databasePath: String, allowNewKey: Bool) throws(StoreError) -> (key: TokenKey, created: Bool) {
        if access(keyPath, F_OK) == 0 { return (try load(at: keyPath, create: false), false) }
        if !allowNewKey, access(databasePath, F_OK) == 0, try hasAnythingToLose(databasePath) {
            throw .keyMissing(keyPath: keyPath, databasePath: databasePath)
        }
        return try loadReporting(at: keyPath, create: true)  // created: false if another process made it first
    }

    /// Whether the database holds any user or chain, or records a key (then a new key would
    /// be refused as another one). Opened read-write but only read: closing the last
    /// connection removes the -wal and -shm files it made, where a read-only connection would
    /// leave them behind, so a refused start leaves the directory as it found it.
    static func hasAnythingToLose(_ path: String) throws(StoreError) -> Bool {
        var options = Connection.Options()
        options.create = false
        do {
            let connection = try Connection(path: path, options: options)
            defer { connection.close() }
            let tables = Set(try connection.statement("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('users', 'chains', 'key_fingerprint')")
                .all { $0.text(0) })
            var rows: Int64 = 0
            if tables.isSuperset(of: ["users", "chains"]) {
                rows += try connection.statement("SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM chains)").first { $0.int(0) } ?? 0
            }
            if tables.contains("key_fingerprint") {
                rows += try connection.statement("SELECT count(*) FROM key_fingerprint").first { $0.int(0) } ?? 0
            }
            return rows > 0
        } catch {
            throw .sqlite(error, path: path)
        }
    }

    /// Refuses to create a database in a directory that does not exist, naming the directory
    /// and what to do (SQLite would say only that it cannot open the file).
    /// - Throws: `.directoryMissing`.
    package static func checkDirectory(ofDatabase databasePath: String) throws(StoreError) {
        let directory = directory(of: databasePath)
        guard access(databasePath, F_OK) != 0, access(directory, F_OK) != 0 else { return }
        throw .directoryMissing(directory, file: "database \(databasePath)", check: "--db / BATON_DB")
    }
}

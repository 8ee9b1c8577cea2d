import BatonCore
import Glibc

extension KeyFile {
    /// The key of the database at `databasePath`. A missing key is created only together with a
    /// new or empty database (no users, no chains), or when `allowNewKey` (`serve --new-key`).
    /// - Returns: the key, and whether this call created its file.
    /// - Throws: `.keyMissing` for a database with users or chains and no key; `.keyFile`; `.sqlite`.
    package static func load(at keyPath: String, forDatabase databasePath: String, allowNewKey: Bool) throws(StoreError) -> (key: TokenKey, created: Bool) {
        if access(keyPath, F_OK) == 0 { return (try load(at: keyPath, create: false), false) }
        if !allowNewKey, access(databasePath, F_OK) == 0, try hasAccountsOrChains(databasePath) {
            throw .keyMissing(keyPath: keyPath, databasePath: databasePath)
        }
        return (try load(at: keyPath, create: true), true)
    }

    /// Whether the database holds any user or chain (opened read-only; changes nothing).
    static func hasAccountsOrChains(_ path: String) throws(StoreError) -> Bool {
        var options = Connection.Options()
        options.readOnlyFile = true
        do {
            let connection = try Connection(path: path, options: options)
            defer { connection.close() }
            let tables = try connection.statement("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('users', 'chains')")
                .first { $0.int(0) } ?? 0
            guard tables == 2 else { return false }
            let rows = try connection.statement("SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM chains)").first { $0.int(0) } ?? 0
            return rows > 0
        } catch {
            throw .sqlite(error, path: path)
        }
    }
}

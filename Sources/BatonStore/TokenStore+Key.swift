import BatonCore
import BatonOperations
import BatonStorage

extension TokenStore {
    /// Checks `key` against the fingerprint the database records (`KeyAdoption`), in one
    /// `BEGIN IMMEDIATE` transaction on the connection that becomes the writer's (two processes
    /// starting at once decide one after the other).
    /// - Throws: `.keyMismatch` naming `keyPath` and the database; `.sqlite`.
    static func adoptKey(_ key: TokenKey, keyPath: String, replacing: Bool, on connection: Connection, now: Instant) throws(StoreError) {
        let decision: KeyCheck
        do {
            decision = try connection.transaction { () throws(SQLiteError) -> KeyCheck in
                try KeyAdoption.adopt(key, keyPath: keyPath, replacing: replacing, now: now, in: SQLiteTransaction(connection: connection))
            }
        } catch {
            throw .sqlite(error, path: connection.path)
        }
        connection.uncommittedEvents = []  // written before the writer exists: nothing to report
        if case .refuse(let recorded) = decision {
            throw .keyMismatch(keyPath: keyPath, databasePath: connection.path, recorded: recorded, presented: key.fingerprint)
        }
    }
}
extension TokenStore: KeyRingStore {}

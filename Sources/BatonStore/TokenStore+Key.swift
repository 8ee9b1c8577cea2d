import BatonCore
import BatonStorage

extension TokenStore {
    /// Checks `key` against the fingerprint the database records, in one `BEGIN IMMEDIATE`
    /// transaction (two processes starting at once decide one after the other): records it in
    /// a database that has none (audited `key_recorded` when the database already has users
    /// or chains, i.e. one made before schema version 3), replaces another with `replacing`
    /// (`--new-key`, audited `key_replaced`), and refuses another otherwise.
    /// - Throws: `.keyMismatch` naming `keyPath` and the database; `.sqlite`.
    static func adoptKey(_ key: TokenKey, keyPath: String, replacing: Bool, on connection: Connection, now: Instant) throws(StoreError) {
        let presented = key.fingerprint
        let decision: KeyCheck
        do {
            decision = try connection.transaction { () throws(SQLiteError) -> KeyCheck in
                let recorded = try connection.statement("SELECT fingerprint FROM key_fingerprint WHERE id = 1").first { $0.text(0) }
                let decision = KeyCheck.decide(recorded: recorded, presented: presented, replacing: replacing)
                switch decision {
                case .matches, .refuse:
                    break
                case .record:
                    try connection.statement("INSERT INTO key_fingerprint (id, fingerprint, recorded_at) VALUES (1, ?, ?)")
                        .execute([.text(presented), .int(now.milliseconds)])
                    let inUse = try connection.statement("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM chains)").first { $0.int(0) } ?? 0
                    if inUse != 0 { try SQLiteTransaction.append(.keyRecorded(fingerprint: presented, keyFile: keyPath), at: now, on: connection) }
                case .replace(let previous):
                    try connection.statement("UPDATE key_fingerprint SET fingerprint = ?, recorded_at = ? WHERE id = 1")
                        .execute([.text(presented), .int(now.milliseconds)])
                    try SQLiteTransaction.append(.keyReplaced(previous: previous, fingerprint: presented, keyFile: keyPath), at: now, on: connection)
                }
                return decision
            }
        } catch {
            throw .sqlite(error, path: connection.path)
        }
        connection.uncommittedEvents = []  // written before the writer exists: nothing to report
        if case .refuse(let recorded) = decision {
            throw .keyMismatch(keyPath: keyPath, databasePath: connection.path, recorded: recorded, presented: presented)
        }
    }
}

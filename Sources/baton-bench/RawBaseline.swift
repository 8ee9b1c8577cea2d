import CSQLite
import Glibc

/// The same durable work with bare libsqlite3 calls and no engine around them: read the head,
/// update it, insert a lineage row and an audit row, `batch` exchanges per `COMMIT`, on
/// chains the engine's runs never touch. The engine's numbers are divided by these.
final class RawBaseline: @unchecked Sendable {
    private let db: OpaquePointer
    private let select: OpaquePointer
    private let update: OpaquePointer
    private let lineage: OpaquePointer
    private let audit: OpaquePointer
    private let chains: [Int64]
    private var cursor = 0
    private var generation: Int64 = 0

    init(path: String, chains: [Int64]) {
        var handle: OpaquePointer?
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        db = handle!
        sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=5000", nil, nil, nil)
        func prepare(_ sql: String) -> OpaquePointer {
            var statement: OpaquePointer?
            let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
            precondition(code == SQLITE_OK, String(cString: sqlite3_errmsg(handle)))
            return statement!
        }
        select = prepare("SELECT head_generation, head_hash, head_issued_at FROM chains WHERE id = ?")
        update = prepare("UPDATE chains SET head_generation = ?, head_hash = randomblob(32), head_issued_at = ?, head_expires_at = ?, head_presented = 0, last_exchange_at = ? WHERE id = ?")
        lineage = prepare("INSERT INTO tokens (chain_id, generation, hash, issued_at, ended_at, ended_by, ip, user_agent, device_id) VALUES (?, ?, ?, ?, ?, 'exchanged', '127.0.0.1', 'bench', 'bench')")
        audit = prepare("INSERT INTO audit (at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail) VALUES (?, 'exchanged', 1, 'bench', ?, ?, '127.0.0.1', 'bench', 'bench', '{}')")
        self.chains = chains
    }

    deinit {
        for statement in [select, update, lineage, audit] { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// One transaction of `batch` exchanges.
    func exchangeBatch(_ batch: Int) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        let now = Int64(LoadRunner.now() * 1000)
        for _ in 0..<batch {
            let chain = chains[cursor % chains.count]
            cursor += 1
            sqlite3_bind_int64(select, 1, chain)
            guard sqlite3_step(select) == SQLITE_ROW else { fatalError("raw baseline: chain missing") }
            let head = sqlite3_column_int64(select, 0)
            let hash = Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(select, 1), count: 32))
            let issued = sqlite3_column_int64(select, 2)
            sqlite3_reset(select)
            bind(update, [head + 1, now, now + 900_000, now, chain])
            hash.withUnsafeBytes { bytes in
                sqlite3_bind_int64(lineage, 1, chain)
                sqlite3_bind_int64(lineage, 2, head)
                sqlite3_bind_blob(lineage, 3, bytes.baseAddress, 32, nil)
                sqlite3_bind_int64(lineage, 4, issued)
                sqlite3_bind_int64(lineage, 5, now)
                step(lineage)
            }
            bind(audit, [now, chain, head + 1])
        }
        let code = sqlite3_exec(db, "COMMIT", nil, nil, nil)
        precondition(code == SQLITE_OK, String(cString: sqlite3_errmsg(db)))
    }

    private func bind(_ statement: OpaquePointer, _ values: [Int64]) {
        for (index, value) in values.enumerated() { sqlite3_bind_int64(statement, Int32(index + 1), value) }
        step(statement)
    }

    private func step(_ statement: OpaquePointer) {
        let code = sqlite3_step(statement)
        precondition(code == SQLITE_DONE, String(cString: sqlite3_errmsg(db)))
        sqlite3_reset(statement)
    }
}

/// Bare point lookups of a chain row by id: the floor under verify.
final class RawLookup: @unchecked Sendable {
    private let db: OpaquePointer
    private let select: OpaquePointer
    private let chains: [Int64]
    private var cursor: Int

    init(path: String, chains: [Int64], seed: Int) {
        var handle: OpaquePointer?
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        db = handle!
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT c.user_id, c.head_generation, c.head_hash, c.head_expires_at, c.revoked_reason, u.username FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = ?", -1, &statement, nil)
        select = statement!
        self.chains = chains
        cursor = seed
    }

    deinit {
        sqlite3_finalize(select)
        sqlite3_close_v2(db)
    }

    func lookup() {
        cursor = (cursor &+ 7919) % chains.count
        sqlite3_bind_int64(select, 1, chains[cursor])
        precondition(sqlite3_step(select) == SQLITE_ROW)
        sqlite3_reset(select)
    }
}

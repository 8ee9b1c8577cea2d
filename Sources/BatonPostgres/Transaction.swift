import BatonCore
import BatonStorage

/// One open transaction on a pooled connection (or, for reads, a connection in autocommit):
/// statements, and the audit events written in it (counted for metrics only once COMMIT
/// returned). Its rows for the operations are in Transaction+Rows.swift.
package final class Transaction {
    private let connection: PostgresConnection
    private(set) var events: [AuditEvent] = []
    /// Webhook events to insert at COMMIT (Transaction+Webhooks.swift says why not earlier).
    var outbox: [OutboxEvent] = []
    /// Set when the body decided that nothing it wrote may stay: the transaction rolls back.
    var isRollbackOnly = false
    /// Whether a statement may have changed a chain or a user (anything but a SELECT that
    /// names either table): the commit is then awaited by every instance (`HeadWatch`).
    /// Saying so too often costs a wait; too rarely would break verify from memory, so
    /// the test is on the text of every statement, not on the callers' word.
    private(set) var mayChangeHeads = false

    /// Statements sent with the next one whose answer is needed (`isDeferrable`), in order.
    private var deferred: [PostgresStatement] = []
    /// Whether statements without an answer wait for the next one that has one (inside
    /// BEGIN ... COMMIT only: an autocommit write's failure must be known before the next).
    private let defersWrites: Bool
    /// At most this many statements wait for the next answer.
    static let deferredLimit = 64

    /// - Parameter defersWrites: true inside BEGIN ... COMMIT (`PostgresStore.transaction`).
    init(_ connection: PostgresConnection, defersWrites: Bool = false) {
        self.connection = connection
        self.defersWrites = defersWrites
    }

    /// Runs one statement with `$n` parameters; rows as text. In a transaction, a statement
    /// that answers nothing (`isDeferrable`: an INSERT, UPDATE or DELETE without RETURNING,
    /// BEGIN, SET) is only queued: it is sent in one pipeline with the next statement that
    /// answers, or with the COMMIT (`finish(_:)`), so an exchange's writes cost one round trip
    /// together rather than one each. Its failure is thrown then: the transaction is aborted
    /// either way, and nothing it wrote stays.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        if !mayChangeHeads, Self.mayChangeHeads(sql) { mayChangeHeads = true }
        if defersWrites, Self.isDeferrable(sql) {
            deferred.append(PostgresStatement(sql, parameters))
            // A long run of writes (an import) goes in pipelines of bounded size: what waits
            // is held in memory here and in libpq, and a failure surfaces within 64 statements.
            if deferred.count >= Self.deferredLimit { try send([]) }
            return []
        }
        return try send([PostgresStatement(sql, parameters)])
    }

    /// Sends what is queued, then `last` (the COMMIT, with its announcement), in one
    /// pipeline; `last` leaves together, after the rest, and its wait is its own; the rows of
    /// the last statement.
    @discardableResult
    func finish(_ last: [PostgresStatement]) throws(PostgresError) -> [[String?]] {
        try send(last, together: true)
    }

    /// Whether a statement reached the server (a body may have sent none: then there is no
    /// transaction to roll back).
    private(set) var hasSent = false

    /// Sends what is queued, then `last`; with `together`, `last` leaves in a write of its own
    /// and its answers get their own wait (`PostgresConnection.pipeline(_:tail:)`).
    @discardableResult
    private func send(_ last: [PostgresStatement], together: Bool = false) throws(PostgresError) -> [[String?]] {
        let statements = deferred + last, tail = together ? deferred.count : 0
        deferred.removeAll(keepingCapacity: true)
        hasSent = true
        return try connection.pipeline(statements, tail: tail)
    }

    /// Whether `sql` answers nothing a caller could read: its failure may wait for the next
    /// statement's answer.
    static func isDeferrable(_ sql: String) -> Bool {
        if sql == "BEGIN" || SQLText.hasPrefix(sql, "SET ") { return true }
        guard SQLText.hasPrefix(sql, "INSERT ") || SQLText.hasPrefix(sql, "UPDATE ") || SQLText.hasPrefix(sql, "DELETE ") else { return false }
        return !SQLText.contains(sql, "RETURNING")
    }

    /// Runs one statement without counting it as a change of heads: only for the presented
    /// mark, which no verify's answer depends on.
    func queryWithoutWaiting(_ sql: String, _ parameters: [String?]) throws(PostgresError) {
        // Outside BEGIN ... COMMIT only: inside, it would overtake the statements still queued.
        assert(!defersWrites, "queryWithoutWaiting inside a transaction")
        try connection.query(sql, parameters)
    }

    /// Whether `sql` may write the `chains` or `users` table.
    static func mayChangeHeads(_ sql: String) -> Bool {
        !SQLText.hasPrefix(sql, "SELECT ") && (SQLText.contains(sql, "chains") || SQLText.contains(sql, "users"))
    }

    /// Appends `event` to the audit table in this transaction.
    package func append(_ event: AuditEvent, at now: Instant) throws(PostgresError) {
        try query("""
            INSERT INTO audit (at, kind, user_id, username, chain_id, generation, ip, user_agent, device_id, detail)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            """, [
                String(now.milliseconds), event.kind.rawValue, event.userID.map(String.init), event.username,
                event.chainID.map { String($0.rawValue) }, event.generation.map(String.init),
                event.context.ip, event.context.userAgent, event.context.deviceID, JSONValue.object(event.detail).text,
            ])
        events.append(event)
    }
}

@available(*, unavailable) extension Transaction: Sendable {}

/// bytea in PostgreSQL's text form (`\x` and hex digits), both ways.
enum ByteaText {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `\x0a1b...` for `bytes`.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `\x...` text; empty for anything else (never for a column we wrote).
    static func decode(_ text: String?) -> [UInt8] {
        guard let text else { return [] }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return [] }
        func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : (c >= 65 ? c - 55 : c - 48) }
        return stride(from: 2, to: utf8.count, by: 2).map { nibble(utf8[$0]) << 4 | nibble(utf8[$0 + 1]) }
    }
}

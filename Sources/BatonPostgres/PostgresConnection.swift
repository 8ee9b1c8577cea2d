import CLibPQ
import Glibc

/// One libpq connection: the only type that calls `PQ*`. Every `PGresult` is cleared in a
/// `defer`; rows are copied out as text before it is. Not thread-safe: the pool lends it to
/// one caller at a time.
final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Warnings the server sent since the last `takeWarnings()`, counted by libpq's notice receiver.
    private let warnings = WarningCount()

    /// The notice receiver's state, reached through libpq's `arg` pointer.
    private final class WarningCount { var count = 0 }

    /// Connects with `uri` (libpq's URI or key=value syntax, multi-host lists included).
    /// Settings the URI does not name get Baton's defaults: a bounded connect, TCP keepalives
    /// that notice a dead peer within seconds. Then bounds every statement and lock wait.
    /// - Throws: `PostgresError` with libpq's message (which never contains the password).
    init(uri: String, statementTimeout: Duration) throws(PostgresError) {
        // expand_dbname: `dbname` is the URI; keywords before it are defaults it may override.
        let keys = ["connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                    "application_name", "dbname"]
        let values = ["3", "5", "2", "2", "5000", "baton", uri]
        handle = Self.withCStrings(keys) { keyPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keyPointers, valuePointers, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            close()
            throw PostgresError(message: Self.firstLine(message), isConnectionLost: true)
        }
        // Count WARNING notices: COMMIT warns (and still succeeds) when a cancel, here the
        // statement timeout, ends its wait for the synchronous standby.
        PQsetNoticeReceiver(handle, { argument, result in
            guard let argument, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))) else { return }
            if String(cString: severity) == "WARNING" { Unmanaged<WarningCount>.fromOpaque(argument).takeUnretainedValue().count += 1 }
        }, Unmanaged.passUnretained(warnings).toOpaque())
        let milliseconds = statementTimeout.components.seconds * 1000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
        do throws(PostgresError) {
            try execute("SET statement_timeout = \(milliseconds)")
            try execute("SET lock_timeout = \(milliseconds)")
            try execute("SET idle_in_transaction_session_timeout = \(milliseconds * 2)")
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Closes the connection (idempotent).
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// The number of WARNING notices since the last call, then zero.
    func takeWarnings() -> Int {
        defer { warnings.count = 0 }
        return warnings.count
    }

    /// Whether libpq still considers the connection usable.
    var isUsable: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Runs `sql` with `$1...` parameters sent as text (nil is NULL) and returns every row,
    /// each column as text or nil.
    /// - Throws: `PostgresError`; `isConnectionLost` when the connection broke.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        let result = Self.withOptionalCStrings(parameters) { pointers in
            PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK:
            var rows: [[String?]] = []
            let rowCount = PQntuples(result), columnCount = PQnfields(result)
            rows.reserveCapacity(Int(rowCount))
            for row in 0..<rowCount {
                rows.append((0..<columnCount).map { column in
                    PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
                })
            }
            return rows
        case PGRES_COMMAND_OK:
            return []
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(handle))
            throw PostgresError(sqlState: state, message: Self.firstLine(message), isConnectionLost: PQstatus(handle) != CONNECTION_OK)
        }
    }

    /// Runs statements without parameters (several separated by `;` allowed).
    func execute(_ sql: String) throws(PostgresError) {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(handle))
            throw PostgresError(sqlState: state, message: Self.firstLine(message), isConnectionLost: PQstatus(handle) != CONNECTION_OK)
        }
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n", maxSplits: 1).first ?? "").trimmingCharacters(in: " ")
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        withOptionalCStrings(strings, { pointers in body(pointers + [nil]) })
    }

    private static func withOptionalCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

@available(*, unavailable) extension PostgresConnection: Sendable {}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

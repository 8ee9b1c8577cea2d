import CSQLite

/// A value bound to a statement parameter.
package enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case blob([UInt8])

    /// `.text(value)` or `.null`.
    package static func optional(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    /// `.int(value)` or `.null`.
    package static func optional(_ value: Int64?) -> SQLValue { value.map(SQLValue.int) ?? .null }
}

/// A prepared statement. Prepared in `init`, finalized in `deinit`; each use binds,
/// steps, then resets and clears its bindings, so a cached statement is always clean.
package final class Statement {
    /// The SQL text, for error messages.
    package let sql: String
    private let handle: OpaquePointer
    private let database: OpaquePointer

    init(database: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLiteError(code: sqlite3_extended_errcode(database), message: String(cString: sqlite3_errmsg(database)), sql: sql)
        }
        self.sql = sql
        self.handle = statement
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Runs the statement to completion, ignoring any rows.
    package func execute(_ values: [SQLValue] = []) throws(SQLiteError) {
        try bind(values)
        defer { clear() }
        while try step() {}
    }

    /// The first row mapped through `read`, or nil when there is none.
    package func first<T>(_ values: [SQLValue] = [], _ read: (Row) -> T) throws(SQLiteError) -> T? {
        try bind(values)
        defer { clear() }
        return try step() ? read(Row(handle: handle)) : nil
    }

    /// Every row mapped through `read`.
    package func all<T>(_ values: [SQLValue] = [], _ read: (Row) -> T) throws(SQLiteError) -> [T] {
        try bind(values)
        defer { clear() }
        var rows: [T] = []
        while try step() { rows.append(read(Row(handle: handle))) }
        return rows
    }

    /// Each row, passed to `body` while the statement is positioned on it.
    package func forEach(_ values: [SQLValue] = [], _ body: (Row) -> Void) throws(SQLiteError) {
        try bind(values)
        defer { clear() }
        while try step() { body(Row(handle: handle)) }
    }

    private func bind(_ values: [SQLValue]) throws(SQLiteError) {
        precondition(Int(sqlite3_bind_parameter_count(handle)) == values.count, "wrong parameter count for: \(sql)")
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .int(let number): code = sqlite3_bind_int64(handle, index, number)
            case .text(let text): code = sqlite3_bind_text(handle, index, text, -1, baton_sqlite_transient())
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), baton_sqlite_transient())
                }
            }
            // A bind only fails for a bad index or out of memory: a bug or a dying process.
            guard code == SQLITE_OK else {
                clear()
                throw SQLiteError(code: code, message: "bind failed", sql: sql)
            }
        }
    }

    /// true for a row, false when done; any other result code throws.
    private func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            throw SQLiteError(code: sqlite3_extended_errcode(database), message: String(cString: sqlite3_errmsg(database)), sql: sql)
        }
    }

    private func clear() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}

@available(*, unavailable)
extension Statement: Sendable {}

/// The current row of a statement, read by column index.
package struct Row {
    fileprivate let handle: OpaquePointer

    package func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// The number of columns in the result.
    package var columnCount: Int32 { sqlite3_column_count(handle) }

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    /// The column's storage class: `SQLITE_INTEGER`, `SQLITE_TEXT`, `SQLITE_BLOB`, `SQLITE_NULL` ...
    package func storageClass(_ column: Int32) -> Int32 { sqlite3_column_type(handle, column) }

    package func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }

    package func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    package func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    package func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

import CSQLite

/// A failed SQLite call: the extended result code, SQLite's message and the statement.
/// Never carries bound values, which may be token hashes or password hashes.
package struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Extended result code (`sqlite3_extended_errcode`).
    package var code: Int32
    /// `sqlite3_errmsg`, or our own text for checks made before SQLite is called.
    package var message: String
    /// The SQL text being run, when there is one.
    package var sql: String?

    package init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`code & 0xFF`), e.g. `SQLITE_BUSY`.
    package var primaryCode: Int32 { code & 0xFF }

    /// Whether the error is a `UNIQUE` or `PRIMARY KEY` violation.
    package var isUniqueViolation: Bool {
        // SQLITE_CONSTRAINT_UNIQUE and _PRIMARYKEY are function-like macros Swift cannot import:
        // (SQLITE_CONSTRAINT | (8<<8)) and (SQLITE_CONSTRAINT | (6<<8)).
        code == SQLITE_CONSTRAINT | (8 << 8) || code == SQLITE_CONSTRAINT | (6 << 8)
    }

    package var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }
}

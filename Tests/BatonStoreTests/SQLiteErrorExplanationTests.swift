@testable import BatonStore
import Testing

/// SQLite's result codes as sentences naming the file: SQLite's own errors, so SQLite only
/// (PostgreSQL's are explained by PostgresError).
struct SQLiteErrorExplanationTests {
    @Test func sqliteErrorsAreExplainedWithThePath() {
        let cases: [(Int32, String)] = [
            (26, "database x.db is not a SQLite database (another file, or damaged) (SQLITE_NOTADB)"),
            (8 | (1 << 8), "database x.db is read-only: the server and the commands that write need write access to the file, its -wal and -shm files and their directory (SQLITE_READONLY)"),
            (5, "database x.db is locked by another process for longer than the busy timeout; retry, or look for a stuck sqlite3 shell or backup (SQLITE_BUSY)"),
            (13, "database x.db cannot grow: the disk (or the quota) is full (SQLITE_FULL)"),
            (3, "database x.db cannot be accessed: permission denied (SQLITE_PERM)"),
        ]
        for (code, text) in cases { #expect(SQLiteError(code: code, message: "raw").explanation(path: "x.db") == text) }
    }
}

import CSQLite

extension SQLiteError {
    /// What an operator reads: the file, the likely cause in words, and what to check, with
    /// SQLite's own code name last for searching. Pure, so each cause is testable alone.
    /// e.g. `database ./baton.db is read-only: check the permissions of the file and its directory (SQLITE_READONLY)`.
    package func explanation(path: String) -> String {
        let (cause, name): (String, String) = switch primaryCode {
        case SQLITE_NOTADB: ("is not a SQLite database (another file, or damaged)", "SQLITE_NOTADB")
        case SQLITE_CORRUPT: ("is damaged; restore it from a backup", "SQLITE_CORRUPT")
        case SQLITE_READONLY:
            ("is read-only: the server and the commands that write need write access to the file, its -wal and -shm files and their directory",
             "SQLITE_READONLY")
        case SQLITE_BUSY, SQLITE_LOCKED:
            ("is locked by another process for longer than the busy timeout; retry, or look for a stuck sqlite3 shell or backup", "SQLITE_BUSY")
        case SQLITE_FULL: ("cannot grow: the disk (or the quota) is full", "SQLITE_FULL")
        case SQLITE_PERM, SQLITE_AUTH: ("cannot be accessed: permission denied", "SQLITE_PERM")
        case SQLITE_CANTOPEN:
            ("cannot be opened: check that its directory exists and that this user may read (and write) the file and the directory",
             "SQLITE_CANTOPEN")
        case SQLITE_IOERR: ("had an I/O error (failing disk, full disk, or a network file system)", "SQLITE_IOERR")
        default: ("failed: \(message)", "SQLite code \(code)")
        }
        return "database \(path) \(cause) (\(name))"
    }
}

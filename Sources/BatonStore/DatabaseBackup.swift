import CSQLite
import Glibc

/// `baton admin backup`: an online copy of a SQLite database (and its key file), each written
/// durably (`DurableFile`): a power cut leaves the previous backup or the new one, whole,
/// never a torn file under the backup's name, and once the command returned the new one.
package enum DatabaseBackup {
    /// What a backup wrote.
    package struct Result: Sendable, Equatable {
        package var bytes: Int
    }

    /// Copies the database at `source` to `destination` (replacing a file there), checked with
    /// `PRAGMA quick_check` before it takes the name, mode 0600.
    package static func copy(database source: String, to destination: String) throws(StoreError) -> Result {
        guard access(source, F_OK) == 0 else { throw .databaseMissing(source) }
        let temporary = DurableFile.temporaryPath(for: destination)
        // The copy is private from its first byte: made 0600 before SQLite writes into it.
        let fd = DurableFile.System().create(temporary, mode: 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT, access(KeyFile.directory(of: destination), F_OK) != 0 {
                throw .directoryMissing(KeyFile.directory(of: destination), file: "backup \(destination)", check: "--to")
            }
            throw .backup("cannot write the backup \(destination): \(String(cString: strerror(code)))")
        }
        close(fd)
        var published = false
        defer { if !published { for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temporary + suffix) } } }
        do throws(SQLiteError) {
            var options = Connection.Options()
            options.create = false
            options.readOnlyFile = true
            let connection = try Connection(path: source, options: options)
            defer { connection.close() }
            try connection.backup(into: temporary)
            let copy = try Connection(path: temporary, options: options)
            defer { copy.close() }
            let check = try copy.statement("PRAGMA quick_check").all { $0.text(0) }
            guard check == ["ok"] else { throw SQLiteError(code: SQLITE_CORRUPT, message: "the copy failed its check: \(check.prefix(3))") }
        } catch {
            throw .sqlite(error, path: source)
        }
        var info = stat()
        let synced = open(temporary, O_RDONLY | O_CLOEXEC)
        guard synced >= 0, fsync(synced) == 0, fstat(synced, &info) == 0 else {
            let code = errno
            if synced >= 0 { close(synced) }
            throw .backup("cannot sync the backup \(temporary): \(String(cString: strerror(code)))")
        }
        close(synced)
        do throws(DurableFile.Failure) { try DurableFile.publish(temporary, as: destination, exclusive: false) } catch {
            throw .backup("cannot write the backup \(destination): \(error)")
        }
        published = true
        return Result(bytes: Int(info.st_size))
    }

    /// Copies the key file at `source` to `destination` durably, mode 0600.
    package static func copyKey(_ source: String, to destination: String) throws(StoreError) {
        guard let handle = fopen(source, "r") else {
            throw .keyFile("cannot read key file \(source): \(String(cString: strerror(errno)))")
        }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = fread(&bytes, 1, bytes.count, handle)
        fclose(handle)
        do throws(DurableFile.Failure) { try DurableFile.write(Array(bytes[..<count]), to: destination, exclusive: false) } catch {
            throw .backup("cannot write the key's copy \(destination): \(error)")
        }
    }
}

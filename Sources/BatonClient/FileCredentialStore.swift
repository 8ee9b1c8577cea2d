import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Credentials in a file (mode 0600), replaced atomically (write a temporary file, fsync,
/// rename, fsync the directory), with `<path>.lock` beside it for `flock`. For Linux clients,
/// tests and tools; on iOS use `KeychainCredentialStore`.
///
/// The file holds the bearer token in the clear, readable only by its owner (like `~/.netrc`).
/// The device key (DPoP) is in `<path>.dpop-key`, also mode 0600.
public struct FileCredentialStore: CredentialStore {
    /// The credentials file.
    public let path: String

    /// A store at `path`; the directory must exist.
    public init(path: String) { self.path = path }

    /// Reads the file; nil when it is missing, empty, truncated or otherwise unreadable as
    /// credentials (the user is then logged out).
    /// - Throws: `.credentialsUnavailable` when the file is there but cannot be read now
    ///   (EACCES, EPERM, EIO, ...: see `readFailure(errno:path:)`) or was written in a newer
    ///   format, `.store` otherwise.
    public func load() throws(BatonClientError) -> StoredCredentials? {
        // Over 1 MiB is not ours: credentials are a few hundred bytes.
        guard let data = try Self.readFile(path, limit: 1 << 20), data.count <= 1 << 20 else { return nil }
        return try StoredCredentials.decodeStored(data)
    }

    /// The file at `path`, read up to the first chunk past `limit` bytes (so a longer file shows
    /// as longer than `limit`); nil when it is missing.
    /// - Throws: as `load()` (`readFailure(errno:path:)`).
    static func readFile(_ path: String, limit: Int) throws(BatonClientError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw readFailure(errno: errno, path: path)
        }
        defer { close(fd) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw readFailure(errno: errno, path: path) }
            if count == 0 { break }
            data.append(contentsOf: chunk[..<count])
            if data.count > limit { break }
        }
        return data
    }

    /// The error for a failed `open` or `read` of the store: "unavailable for now" for the errors
    /// a later try can overcome (no permission yet, as with iOS data protection before the first
    /// unlock; an I/O error; too many open files; no memory), a store error for the rest (a
    /// directory where the file should be, ...). A missing file is no error: nothing is stored.
    static func readFailure(errno code: Int32, path: String) -> BatonClientError {
        let message = "cannot read \(path): \(String(cString: strerror(code)))"
        switch code {
        case EACCES, EPERM, EIO, EAGAIN, EBUSY, EINTR, ENFILE, EMFILE, ENOMEM, ETIMEDOUT: return .credentialsUnavailable(message)
        default: return .store(message)
        }
    }

    /// Writes `credentials` to a temporary file beside the store and renames it over the store.
    public func save(_ credentials: StoredCredentials) throws(BatonClientError) {
        let data: Data
        do { data = try credentials.encoded() } catch { throw .store("cannot encode credentials: \(error)") }
        let temporary = path + ".tmp-" + UUID().uuidString
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .store("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var written = 0
        let failure: String? = data.withUnsafeBytes { bytes in
            while written < bytes.count {
                let count = write(fd, bytes.baseAddress! + written, bytes.count - written)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return String(cString: strerror(errno)) }
                written += count
            }
            // A crash after rename must not leave an empty file: the data reaches the disk first.
            return fsync(fd) == 0 ? nil : String(cString: strerror(errno))
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw .store("cannot write \(temporary): \(failure)")
        }
        guard rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw .store("cannot replace \(path): \(message)")
        }
        Self.syncDirectory(of: path)
    }

    /// The software device key in `<path>.dpop-key` (mode 0600; `DeviceKeyFile`).
    public func deviceKey(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        try DeviceKeyFile(path: path + ".dpop-key").load(creating: creating)
    }

    /// Deletes `<path>.dpop-key`; a missing file is no failure.
    public func resetDeviceKey() throws(BatonClientError) {
        let keyPath = path + ".dpop-key"
        guard unlink(keyPath) == 0 || errno == ENOENT else {
            throw .deviceKey("cannot delete \(keyPath): \(String(cString: strerror(errno)))")
        }
        Self.syncDirectory(of: keyPath)
    }

    /// Waits for the exclusive `flock` on `<path>.lock`.
    public func lock() async throws(BatonClientError) -> CredentialStoreLock {
        try await FileLock(path: path + ".lock").acquire()
    }

    /// Makes a rename or link to `path` durable (the directory entry), best effort.
    static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

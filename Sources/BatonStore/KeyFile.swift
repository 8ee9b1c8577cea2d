import BatonCore
import Glibc

/// The token MAC key on disk: 64 hex digits and a newline, mode 0600, created on first
/// start with `O_EXCL` (two processes starting at once agree on one key) and fsynced.
package enum KeyFile {
    /// The default key path for a database: the database path plus `.key`.
    package static func defaultPath(forDatabase path: String) -> String { path + ".key" }

    /// Reads the key at `path`, creating it first when missing and `create` is true.
    /// - Throws: `.keyFile` if it is missing (and not created), malformed, or group/other accessible.
    package static func load(at path: String, create: Bool) throws(StoreError) -> TokenKey {
        if create, access(path, F_OK) != 0 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                fchmod(fd, 0o600)  // exactly owner read-write, whatever the umask took away
                let key = TokenKey.generate()
                let text = Array((hex(key.bytes) + "\n").utf8)
                let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                let synced = fsync(fd)
                close(fd)
                guard written == text.count, synced == 0 else {
                    unlink(path)
                    throw .keyFile("cannot write key file \(path): \(String(cString: strerror(errno)))")
                }
                syncDirectory(of: path)
                return key
            } else if errno == ENOENT, access(directory(of: path), F_OK) != 0 {
                throw .directoryMissing(directory(of: path), file: "key file \(path)", check: "--key-file / BATON_KEY_FILE")
            } else if errno != EEXIST {
                throw .keyFile("cannot create key file \(path): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .keyFile("cannot read key file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .keyFile("key file \(path) is accessible by group or others; run: chmod 600 \(path)")
        }
        guard let handle = fopen(path, "r") else {
            throw .keyFile("cannot read key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(handle) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = fread(&buffer, 1, buffer.count, handle)
        let text = buffer[..<count].filter { $0 != 10 && $0 != 13 }
        guard text.count == 64, let bytes = unhex(Array(text)), let key = TokenKey(bytes: bytes) else {
            throw .keyFile("key file \(path) is malformed (expected 64 hex digits)")
        }
        guard key.looksRandom else {
            throw .keyFile("""
                key file \(path) is not random (its 32 bytes take only \(key.distinctByteCount) distinct \
                value\(key.distinctByteCount == 1 ? "" : "s"), fewer than \(TokenKey.minimumDistinctBytes)): \
                write a random key, e.g. openssl rand -hex 32 > \(path) (tokens signed with the old key stop working)
                """)
        }
        return key
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    private static func unhex(_ text: [UInt8]) -> [UInt8]? {
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var out: [UInt8] = []
        var index = 0
        while index + 1 < text.count {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// The directory a file path names its file in (`.` for a bare name, `/` for `/name`).
    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// fsync the directory so the new file's name is durable too.
    private static func syncDirectory(of path: String) {
        let fd = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}

import BatonCore
import Glibc

/// The token MAC key on disk: 64 hex digits and a newline, mode 0600, created on first
/// start durably and exclusively (`DurableFile`: two processes starting at once agree on one
/// key, and a power cut leaves no key or the whole key).
package enum KeyFile {
    /// The default key path for a database: the database path plus `.key`.
    package static func defaultPath(forDatabase path: String) -> String { path + ".key" }

    /// Reads the key at `path`, creating it first when missing and `create` is true.
    /// - Throws: `.keyFile` if it is missing (and not created), malformed, or group/other accessible.
    package static func load(at path: String, create: Bool) throws(StoreError) -> TokenKey {
        try loadReporting(at: path, create: create).key
    }

    /// `load(at:create:)`, and whether this call made the file: false when another process
    /// made it first (this call then read that process's key), so that only the process that
    /// made a key ever removes it again after a failed start.
    package static func loadReporting(at path: String, create: Bool) throws(StoreError) -> (key: TokenKey, created: Bool) {
        if create, access(path, F_OK) != 0 {
            // Durably (DurableFile): a temporary file, fsynced, linked to the name (which fails
            // if another process made the key first: then its key is read below), and the
            // directory fsynced. A power cut leaves no key or the whole key, never a torn one.
            let key = TokenKey.generate()
            do throws(DurableFile.Failure) {
                try DurableFile.write(Array((hex(key.bytes) + "\n").utf8), to: path, mode: 0o600, exclusive: true)
                return (key, true)
            } catch .exists {
                // another process created it first: read theirs
            } catch .failed(_, let step, let code) where step == "create" && code == ENOENT && access(directory(of: path), F_OK) != 0 {
                throw .directoryMissing(directory(of: path), file: "key file \(path)", check: "--key-file / BATON_KEY_FILE")
            } catch {
                guard case .failed(_, _, let code) = error else { throw .keyFile("cannot create key file \(path): \(error)") }
                throw .keyFile("cannot create key file \(path): \(String(cString: strerror(code)))")
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
        return (key, false)
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
}

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The device key of a `FileCredentialStore`: a software P-256 key in `<store>.dpop-key`,
/// mode 0600, beside the credentials, so that every process sharing the store shares the key.
///
/// It is created once: written to a temporary file, synced, then `link(2)`ed to its name,
/// which fails if the name exists (as `O_EXCL` would), so two processes creating at once end
/// up with the one key that won, never a torn file; the loser reads the winner's. Callers
/// create it under the store's lock as well (login does).
///
/// The file holds `{"version":1,"d":"<base64url scalar>"}`.
struct DeviceKeyFile: Sendable {
    /// The key file.
    let path: String

    /// The key, created first when missing and `creating`.
    /// - Throws: `.credentialsUnavailable` when the file is there but cannot be read now,
    ///   `.deviceKey` when it is unreadable as a key or cannot be written.
    func load(creating: Bool) throws(BatonClientError) -> DeviceKey? {
        do {
            if let key = try readKey() { return key }
        } catch .deviceKey(let why) where creating {
            // H3, as for the Keychain: a file that holds no usable key is replaced at login
            // (under the store's lock); elsewhere it is an error, never "no key".
            guard unlink(path) == 0 || errno == ENOENT else { throw .deviceKey(why) }
        }
        guard creating else { return nil }
        let (key, scalar) = try DeviceKey.generateSoftware()
        let json = "{\"d\":\"\(Base64URL.encode(scalar))\",\"version\":1}"
        let temporary = path + ".tmp-" + UUID().uuidString
        try writeNew(Array(json.utf8), to: temporary)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            let code = errno
            // Another process made it first: that one is the device's key.
            if code == EEXIST, let key = try readKey() { return key }
            throw .deviceKey("cannot create \(path): \(String(cString: strerror(code)))")
        }
        FileCredentialStore.syncDirectory(of: path)
        return key
    }

    /// The stored key; nil when there is no file.
    private func readKey() throws(BatonClientError) -> DeviceKey? {
        guard let data = try FileCredentialStore.readFile(path, limit: 4096) else { return nil }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              object["version"] as? Int == 1, let text = object["d"] as? String, let scalar = Base64URL.decode(text) else {
            throw .deviceKey("\(path) is not a device key file")
        }
        return try DeviceKey(scalar: scalar)
    }

    /// Writes `bytes` to a new file `name` (mode 0600) and syncs it.
    private func writeNew(_ bytes: [UInt8], to name: String) throws(BatonClientError) {
        let fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .deviceKey("cannot create \(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                unlink(name)
                throw .deviceKey("cannot write \(name): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            unlink(name)
            throw .deviceKey("cannot sync \(name): \(String(cString: strerror(errno)))")
        }
    }
}

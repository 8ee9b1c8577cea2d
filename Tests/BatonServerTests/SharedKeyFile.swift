import Foundation

/// A token key file for several Baton instances sharing one PostgreSQL database, made the
/// way deploy/scale/README.md tells an operator to (`openssl rand -hex 32`: 64 hex digits
/// and a newline, mode 0600), in a temporary directory removed on deinit.
final class SharedKeyFile: Sendable {
    let directory: String
    let path: String

    init() throws {
        directory = try temporaryDirectory("baton-shared-key-")
        path = directory + "/token.key"
        var generator = SystemRandomNumberGenerator()  // getrandom(2) on Linux
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = bytes.map { String(format: "%02x", $0) }.joined() + "\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw OperatorShell.Failure(description: "cannot write \(path)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

import BatonCore

/// The input rules both stores apply before touching storage.
extension LoginRequest {
    /// Longest username, device id and device name accepted, in bytes.
    package static let maxFieldLength = 256

    /// Checks the fields a login carries: non-empty, bounded, no control characters.
    /// - Throws: `.invalidArgument` naming the field.
    package func validate() throws(BatonError) {
        for (name, value) in [("username", username), ("device_id", deviceID), ("device_name", deviceName ?? "-")] {
            guard !value.isEmpty else { throw .invalidArgument("\(name) must not be empty") }
            guard value.utf8.count <= Self.maxFieldLength else { throw .invalidArgument("\(name) is longer than \(Self.maxFieldLength) bytes") }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .invalidArgument("\(name) contains control characters")
            }
        }
        guard !password.isEmpty else { throw .invalidArgument("password must not be empty") }
    }

    /// Usernames: 1-64 bytes of letters, digits and `._@+-`.
    package static func validateUsername(_ username: String) throws(BatonError) {
        guard (1...64).contains(username.utf8.count),
              username.utf8.allSatisfy({ $0 < 128 && (isalnumASCII($0) || "._@+-".utf8.contains($0)) })
        else { throw .invalidArgument("username must be 1-64 characters of letters, digits and . _ @ + -") }
    }

    private static func isalnumASCII(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
    }
}

extension RequestContext {
    /// The context recorded on events caused by an operator.
    package static let admin = RequestContext(userAgent: "baton-admin")
}

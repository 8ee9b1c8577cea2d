import BatonCore

/// The input rules both stores apply before touching storage.
extension LoginRequest {
    /// Longest username, device id and device name accepted, in bytes (and `X-Device-Id`).
    package static let maxFieldLength = 256

    /// Checks the fields a login carries with `validateIdentifier`, and the username against
    /// the rule every account was created under (`validateUsername`): a name no account can
    /// have is refused before any lookup, so no store's case folding (PostgreSQL's `lower()`
    /// maps `İ` to `i` under a UTF-8 locale) can make a second spelling of an account, with
    /// throttle counters of its own.
    /// - Throws: `.invalidArgument` naming the field.
    package func validate() throws(BatonError) {
        try Self.validateIdentifier(username, named: "username")
        try Self.validateUsername(username)
        try Self.validateIdentifier(deviceID, named: "device_id")
        if let deviceName { try Self.validateIdentifier(deviceName, named: "device_name") }
        guard !password.isEmpty else { throw .invalidArgument("password must not be empty") }
    }

    /// The rule for every identifier a client gives Baton (a login's username, device_id and
    /// device_name, the `X-Device-Id` header): not empty, at most `maxFieldLength` bytes, and no
    /// control or format character (C0, DEL, C1 such as U+009B, bidi overrides and isolates,
    /// zero-width characters: `Unicode.Scalar.isControlOrFormat`). They end up in the audit
    /// trail and on an operator's terminal, where such a character would act instead of show.
    /// - Throws: `.invalidArgument` naming the field (and the character).
    package static func validateIdentifier(_ value: String, named name: String) throws(BatonError) {
        guard !value.isEmpty else { throw .invalidArgument("\(name) must not be empty") }
        guard value.utf8.count <= maxFieldLength else { throw .invalidArgument("\(name) is longer than \(maxFieldLength) bytes") }
        // Printable ASCII (nearly every id) has none; `X-Device-Id` is checked on every request.
        guard !value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return }
        if let scalar = value.unicodeScalars.first(where: \.isControlOrFormat) {
            throw .invalidArgument("\(name) contains the control or format character \(scalar.codePointName)")
        }
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

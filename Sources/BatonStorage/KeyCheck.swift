import BatonCore

/// What opening a database with a key does about the fingerprint the database records
/// (`TokenKey.fingerprint`): the same decision on both stores, each executing it in one
/// transaction (docs/admin.md, "The key file").
package enum KeyCheck: Equatable, Sendable {
    /// The recorded fingerprint is this key's.
    case matches
    /// Nothing is recorded (a new database, or one made before schema version 3): record
    /// this key's.
    case record
    /// Another key is recorded and `--new-key` was given: this key replaces it (audited).
    case replace(previous: String)
    /// Another key is recorded: refuse to start, naming both files.
    case refuse(recorded: String)

    /// The decision for a database that records `recorded` (nil: nothing) opened with a key
    /// whose fingerprint is `presented`; `replacing` is `serve --new-key`.
    package static func decide(recorded: String?, presented: String, replacing: Bool) -> KeyCheck {
        guard let recorded else { return .record }
        if recorded == presented { return .matches }
        return replacing ? .replace(previous: recorded) : .refuse(recorded: recorded)
    }

    /// The message for `.refuse`, on either store: names the key file and the database, the
    /// two fingerprints (16 hex digits each), and the two ways on.
    /// - Parameter restore: where the database's own key comes from (a backup; another instance).
    package static func mismatchMessage(keyPath: String, database: String, recorded: String, presented: String, restore: String) -> String {
        """
        key file \(keyPath) does not match database \(database): the database was used with another key \
        (fingerprint \(recorded.prefix(16)); this file's is \(presented.prefix(16))), and every token it issued would be \
        invalid. Start with the database's own key file (\(restore); docs/admin.md, "The key file"). If that key \
        is lost for good, start once with --new-key to make \(keyPath) the database's key: every user must log in again.
        """
    }
}

extension AuditEvent {
    /// A database without a fingerprint recorded the key it was started with.
    package static func keyRecorded(fingerprint: String, keyFile: String) -> AuditEvent {
        AuditEvent(kind: .keyRecorded, detail: ["fingerprint": .string(fingerprint), "key_file": .string(keyFile)])
    }

    /// `--new-key` made `fingerprint`'s key the database's, in place of `previous`'s.
    package static func keyReplaced(previous: String, fingerprint: String, keyFile: String) -> AuditEvent {
        AuditEvent(kind: .keyReplaced, detail: ["previous": .string(previous), "fingerprint": .string(fingerprint), "key_file": .string(keyFile)])
    }
}

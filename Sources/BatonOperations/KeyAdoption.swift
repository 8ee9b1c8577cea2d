import BatonCore
import BatonStorage

/// Opening a database with a key, the same on both stores: `KeyCheck` decides against the
/// fingerprint the database records, and this applies the decision in the caller's
/// transaction (SQLite's `BEGIN IMMEDIATE` before the writer starts; PostgreSQL's under the
/// schema's advisory lock), so processes starting together decide one after the other.
package enum KeyAdoption {
    /// Records the key in a database that has none (audited `key_recorded` when the database
    /// already has users or chains: one made before schema version 3), replaces another with
    /// `replacing` (`--new-key`, audited `key_replaced`), and leaves a refusal to the caller.
    /// - Returns: the decision (`.refuse` changed nothing).
    package static func adopt<T: StoreTransaction>(
        _ key: TokenKey, keyPath: String, replacing: Bool, now: Instant, in transaction: T
    ) throws(T.Failure) -> KeyCheck {
        let presented = key.fingerprint
        let decision = KeyCheck.decide(recorded: try transaction.recordedKeyFingerprint(), presented: presented, replacing: replacing)
        switch decision {
        case .matches, .refuse:
            break
        case .record:
            try transaction.recordKeyFingerprint(presented, replacing: false, now: now)
            if try transaction.hasUsersOrChains() { try transaction.record(.keyRecorded(fingerprint: presented, keyFile: keyPath), at: now) }
        case .replace(let previous):
            try transaction.recordKeyFingerprint(presented, replacing: true, now: now)
            // The ring's keys are wrapped under the previous key: unreadable now, and their
            // tokens invalid like every other (docs/admin.md, "The key file").
            try transaction.deleteTokenKeys()
            try transaction.record(.keyReplaced(previous: previous, fingerprint: presented, keyFile: keyPath), at: now)
        }
        return decision
    }
}

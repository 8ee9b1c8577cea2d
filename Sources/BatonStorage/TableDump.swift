/// One table's rows as `baton admin migrate` moves them between stores: the same table and
/// column names in both schemas, values typed by kind (nil is NULL).
package struct TableDump: Sendable, Equatable {
    /// One stored value.
    package enum Value: Sendable, Equatable {
        case int(Int64)
        case text(String)
        case blob([UInt8])
    }

    package var table: String
    package var columns: [String]
    package var rows: [[Value?]]

    package init(table: String, columns: [String], rows: [[Value?]]) {
        self.table = table
        self.columns = columns
        self.rows = rows
    }

    /// The tables in the order a copy must write them (references first), with their columns.
    package static let layout: [(table: String, columns: [String])] = [
        ("users", ["id", "username", "password_hash", "created_at", "password_changed_at", "disabled_at"]),
        ("chains", ["id", "user_id", "device_id", "device_class", "device_name", "created_at", "head_generation", "head_hash",
                    "head_issued_at", "head_expires_at", "head_presented", "last_exchange_at", "auth_time", "confirm_failures",
                    "revoked_at", "revoked_reason", "jkt", "head_key", "last_used_at", "last_used_ip",
                    "last_used_user_agent", "head_attempt"]),
        ("tokens", ["chain_id", "generation", "hash", "issued_at", "ended_at", "ended_by", "ip", "user_agent", "device_id"]),
        ("audit", ["id", "at", "kind", "user_id", "username", "chain_id", "generation", "ip", "user_agent", "device_id", "detail"]),
        // The key's fingerprint goes along, so every instance is checked against the SQLite key.
        ("key_fingerprint", ["id", "fingerprint", "recorded_at"]),
        // The ring's keys go along, wrapped under the same key file: its tokens keep working.
        ("token_keys", ["id", "wrapped", "fingerprint", "created_at", "retired_at"]),
        // The identity providers and the identities linked to accounts: their users keep logging in.
        ("identity_issuers", ["name", "issuer", "settings", "created_at"]),
        ("identity_links", ["issuer", "subject", "user_id", "created_at"]),
    ]
}

import BatonCore
import BatonOperations
import BatonStorage

/// The identity providers' rows (`identity_issuers`, `identity_links`) on SQLite.
extension SQLiteTransaction {
    package func identityIssuer(issuer: String) throws(SQLiteError) -> IdentityIssuerRecord? {
        try connection.statement("SELECT name, issuer, settings, created_at FROM identity_issuers WHERE issuer = ?")
            .first([.text(issuer)]) { Self.issuerRecord($0) }
    }

    package func identityIssuers() throws(SQLiteError) -> [IdentityIssuerRecord] {
        try connection.statement("SELECT name, issuer, settings, created_at FROM identity_issuers ORDER BY name").all { Self.issuerRecord($0) }
    }

    private static func issuerRecord(_ row: Row) -> IdentityIssuerRecord {
        IdentityIssuerRecord(name: row.text(0), issuer: row.text(1), settings: row.text(2), createdAt: Instant(milliseconds: row.int(3)))
    }

    package func insertIdentityIssuer(_ record: IdentityIssuerRecord) throws(SQLiteError) -> Bool {
        do {
            try connection.statement("INSERT INTO identity_issuers (name, issuer, settings, created_at) VALUES (?, ?, ?, ?)")
                .execute([.text(record.name), .text(record.issuer), .text(record.settings), .int(record.createdAt.milliseconds)])
            return true
        } catch where error.isUniqueViolation {
            return false
        }
    }

    package func deleteIdentityIssuer(named name: String) throws(SQLiteError) -> Bool {
        try connection.statement("DELETE FROM identity_issuers WHERE name = ?").execute([.text(name)])
        return connection.changes == 1
    }

    package func linkedUser(issuer: String, subject: String) throws(SQLiteError) -> Int64? {
        try connection.statement("SELECT user_id FROM identity_links WHERE issuer = ? AND subject = ?")
            .first([.text(issuer), .text(subject)]) { $0.int(0) }
    }

    package func insertIdentityLink(issuer: String, subject: String, userID: Int64, now: Instant) throws(SQLiteError) -> Bool {
        try connection.statement("INSERT OR IGNORE INTO identity_links (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)")
            .execute([.text(issuer), .text(subject), .int(userID), .int(now.milliseconds)])
        return connection.changes == 1
    }

    package func deleteIdentityLink(issuer: String, subject: String) throws(SQLiteError) -> Bool {
        try connection.statement("DELETE FROM identity_links WHERE issuer = ? AND subject = ?").execute([.text(issuer), .text(subject)])
        return connection.changes == 1
    }

    package func identityLinks(ofUser userID: Int64?) throws(SQLiteError) -> [IdentityLink] {
        try connection.statement("""
            SELECT l.issuer, l.subject, l.user_id, u.username, l.created_at FROM identity_links l JOIN users u ON u.id = l.user_id
            WHERE ?1 IS NULL OR l.user_id = ?1 ORDER BY l.issuer, l.subject
            """).all([userID.map { .int($0) } ?? .null]) { row in
            IdentityLink(issuer: row.text(0), subject: row.text(1), userID: row.int(2), username: row.text(3),
                         createdAt: Instant(milliseconds: row.int(4)))
        }
    }
}

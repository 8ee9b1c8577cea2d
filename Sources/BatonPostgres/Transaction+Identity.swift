import BatonCore
import BatonOperations
import BatonStorage

/// The identity providers' rows (`identity_issuers`, `identity_links`) on PostgreSQL.
extension Transaction {
    package func identityIssuer(issuer: String) throws(PostgresError) -> IdentityIssuerRecord? {
        try query("SELECT name, issuer, settings, created_at FROM identity_issuers WHERE issuer = $1", [issuer]).first.map(Self.issuerRecord)
    }

    package func identityIssuers() throws(PostgresError) -> [IdentityIssuerRecord] {
        try query("SELECT name, issuer, settings, created_at FROM identity_issuers ORDER BY name").map(Self.issuerRecord)
    }

    private static func issuerRecord(_ row: [String?]) -> IdentityIssuerRecord {
        IdentityIssuerRecord(name: row.text(0), issuer: row.text(1), settings: row.text(2), createdAt: row.instant(3))
    }

    package func insertIdentityIssuer(_ record: IdentityIssuerRecord) throws(PostgresError) -> Bool {
        !(try query("""
            INSERT INTO identity_issuers (name, issuer, settings, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING name
            """, [record.name, record.issuer, record.settings, String(record.createdAt.milliseconds)]).isEmpty)
    }

    package func deleteIdentityIssuer(named name: String) throws(PostgresError) -> Bool {
        !(try query("DELETE FROM identity_issuers WHERE name = $1 RETURNING name", [name]).isEmpty)
    }

    package func linkedUser(issuer: String, subject: String) throws(PostgresError) -> Int64? {
        try query("SELECT user_id FROM identity_links WHERE issuer = $1 AND subject = $2", [issuer, subject]).first.map { $0.int(0) }
    }

    package func insertIdentityLink(issuer: String, subject: String, userID: Int64, now: Instant) throws(PostgresError) -> Bool {
        !(try query("""
            INSERT INTO identity_links (issuer, subject, user_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING user_id
            """, [issuer, subject, String(userID), String(now.milliseconds)]).isEmpty)
    }

    package func deleteIdentityLink(issuer: String, subject: String) throws(PostgresError) -> Bool {
        !(try query("DELETE FROM identity_links WHERE issuer = $1 AND subject = $2 RETURNING user_id", [issuer, subject]).isEmpty)
    }

    package func identityLinks(ofUser userID: Int64?) throws(PostgresError) -> [IdentityLink] {
        try query("""
            SELECT l.issuer, l.subject, l.user_id, u.username, l.created_at FROM identity_links l JOIN users u ON u.id = l.user_id
            WHERE $1::bigint IS NULL OR l.user_id = $1::bigint ORDER BY l.issuer, l.subject
            """, [userID.map { String($0) }]).map { row in
            IdentityLink(issuer: row.text(0), subject: row.text(1), userID: row.int(2), username: row.text(3), createdAt: row.instant(4))
        }
    }
}

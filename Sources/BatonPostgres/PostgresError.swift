/// A failure of libpq or the server: what went wrong, never with bound values (tokens, hashes).
package struct PostgresError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The SQLSTATE the server sent (e.g. `23505`), nil for a client-side or connection failure.
    package var sqlState: String?
    /// libpq's or the server's message, first line.
    package var message: String
    /// The connection is gone (server down, network, failover): drop it and connect anew.
    package var isConnectionLost: Bool

    package init(sqlState: String? = nil, message: String, isConnectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message
        self.isConnectionLost = isConnectionLost
    }

    /// `23505`: a unique constraint refused the row.
    package var isUniqueViolation: Bool { sqlState == "23505" }

    package var description: String {
        (sqlState.map { "PostgreSQL error \($0): " } ?? "PostgreSQL: ") + message
    }
}

/// PostgreSQL connection strings as `--db` takes them.
package enum PostgresURI {
    /// Whether `text` names a PostgreSQL database (`postgresql://` or `postgres://`, libpq's URI schemes).
    package static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// `text` with any password removed, for messages and logs: `user:secret@` becomes
    /// `user@`, and a `password=` parameter becomes `password=***`.
    package static func redacted(_ text: String) -> String {
        var out = text
        if let schemeEnd = Self.schemeEnd(of: out) {
            let rest = out[schemeEnd...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                out.replaceSubrange(colon..<at, with: "")
            }
        }
        var parts = out.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2 {
            parts[1] = parts[1].split(separator: "&", omittingEmptySubsequences: false).map { pair in
                pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
            }.joined(separator: "&")
            out = parts.joined(separator: "?")
        }
        return out
    }

    /// Where the authority starts (after `scheme://`), if `text` is a URI.
    private static func schemeEnd(of text: String) -> String.Index? {
        for scheme in ["postgresql://", "postgres://"] where text.hasPrefix(scheme) {
            return text.index(text.startIndex, offsetBy: scheme.count)
        }
        return nil
    }
}

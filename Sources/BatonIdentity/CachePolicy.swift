/// How long a fetched JWK Set is used before it is fetched again: its `Cache-Control: max-age`
/// (RFC 9111 §5.2.2.1), held within bounds so that a provider can neither make Baton fetch on
/// every login nor keep a withdrawn key trusted for days. Pure.
package enum CachePolicy {
    /// The shortest and longest lifetimes, and the one used without a usable `max-age`.
    package static let minimum: Duration = .seconds(60)
    package static let maximum: Duration = .seconds(86_400)
    package static let fallback: Duration = .seconds(3_600)

    /// The lifetime `header` (a `Cache-Control` value, or nil) gives, bounded. `no-store` and
    /// `no-cache` give the minimum (the set is still needed to verify the token at hand).
    package static func lifetime(cacheControl header: String?) -> Duration {
        guard let header else { return fallback }
        var lifetime: Duration?
        for directive in header.lowercased().split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
            switch parts.first {
            case "no-store", "no-cache": return minimum
            case "max-age" where parts.count == 2:
                let digits = parts[1].hasPrefix("\"") && parts[1].hasSuffix("\"") && parts[1].count >= 2
                    ? String(parts[1].dropFirst().dropLast()) : parts[1]
                guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { continue }
                // RFC 9111 §1.2.2: a delta-seconds too large to hold is 2^31.
                let seconds = Int64(digits.prefix(12)) ?? Int64(Int32.max)
                lifetime = .seconds(seconds)
            default: continue
            }
        }
        guard let lifetime else { return fallback }
        return min(max(lifetime, minimum), maximum)
    }
}

private extension Substring {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

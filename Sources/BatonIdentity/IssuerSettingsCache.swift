import BatonStorage
import BatonSync

/// Issuers' settings as parsed from their stored JSON, kept by the stored text: the row is
/// read for every token exchange (so a change on any instance holds at once), but parsing it
/// again each time would make every forged token cost a JSON parse more.
package final class IssuerSettingsCache: Sendable {
    private let parsed = Locked<[String: IdentityIssuer]>([:])
    /// More distinct texts than this (issuers changed again and again) start the cache afresh.
    private static let limit = 64

    package init() {}

    /// The issuer `record` stores; nil when this build cannot read its settings.
    package func issuer(_ record: IdentityIssuerRecord) -> IdentityIssuer? {
        let key = record.name + "\u{0}" + record.issuer + "\u{0}" + record.settings
        if let known = parsed.withLock({ $0[key] }) { return known }
        guard let issuer = IdentityIssuer(name: record.name, issuer: record.issuer, settingsJSON: record.settings) else { return nil }
        parsed.withLock { cache in
            if cache.count >= Self.limit { cache.removeAll() }
            cache[key] = issuer
        }
        return issuer
    }
}

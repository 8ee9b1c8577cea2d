import BatonCore
import BatonDPoP
import BatonSync

/// Each configured issuer's signing keys, as this process last fetched them (OIDC Discovery,
/// then the `jwks_uri`), or the operator's static set. Shared by the worker threads.
///
/// The bounds that keep a provider's trouble, or a flood of forged tokens, from becoming
/// anyone else's (docs/identity.md, "Keys"):
/// - a set is used for its `Cache-Control` lifetime (`CachePolicy`, 1 minute to 24 hours);
/// - a token naming a `kid` the set lacks (a rotation Baton has not seen yet) causes a fetch
///   at most once per `refetchInterval` per issuer, however many such tokens arrive;
/// - at most one fetch per issuer is in flight: the other requests use the keys at hand
///   (or, with none yet, are answered 503 at once), so no more than one worker per issuer
///   ever waits on a provider, and that one for at most the fetcher's timeout;
/// - a failed fetch keeps the previous set in use until a new one loads, for at most a day
///   past the set's lifetime (`maximumStaleness`).
package final class KeySetCache: Sendable {
    private struct Entry {
        /// What the entry was fetched for: a changed configuration starts afresh.
        var configuration: String
        var keys: KeySet?
        var expiresAt = Instant(milliseconds: 0)
        var lastFetch: Instant?
        var fetching = false
        var lastError: String?
    }

    private let entries = Locked<[String: Entry]>([:])
    private let fetcher: HTTPSFetcher
    private let clock: any WallClock
    /// How often a token with an unknown `kid` may make an issuer's set be fetched again.
    package let refetchInterval: Duration
    /// Fetches made (discovery and key set together count one), for /metrics and the tests.
    private let fetches = Locked<Int>(0)

    package static let defaultRefetchInterval: Duration = .seconds(30)
    /// How long past its lifetime a set is still used while fetching a new one fails.
    package static let maximumStaleness: Duration = .seconds(86_400)

    package init(fetcher: HTTPSFetcher = HTTPSFetcher(), clock: any WallClock = SystemClock(),
                 refetchInterval: Duration = defaultRefetchInterval) {
        self.fetcher = fetcher
        self.clock = clock
        self.refetchInterval = refetchInterval
    }

    /// How many fetches this process has started.
    package var fetchCount: Int { fetches.withLock { $0 } }

    /// The keys to check a token from `issuer` whose header names `kid`.
    /// - Throws: `KeySetError` when no set is at hand and none could be fetched now.
    package func keys(for issuer: IdentityIssuer, kid: String?) throws(KeySetError) -> KeySet {
        if let staticKeys = issuer.staticKeys { return try staticSet(staticKeys, of: issuer.name) }
        let configuration = issuer.issuer + "\u{0}" + (issuer.caPEM ?? "")
        let now = clock.now()
        let decision: (fetch: Bool, keys: KeySet?, error: String?) = entries.withLock { entries in
            var entry = entries[issuer.name].flatMap { $0.configuration == configuration ? $0 : nil } ?? Entry(configuration: configuration)
            defer { entries[issuer.name] = entry }
            let stale = entry.keys == nil || now >= entry.expiresAt
            let missing = kid.map { entry.keys?.contains(kid: $0) == false } ?? false
            let usable = now < entry.expiresAt + Self.maximumStaleness ? entry.keys : nil
            guard stale || missing, !entry.fetching else { return (false, usable, entry.lastError) }
            if let last = entry.lastFetch, now - last < refetchInterval { return (false, usable, entry.lastError) }
            entry.fetching = true
            entry.lastFetch = now
            return (true, entry.keys, nil)
        }
        guard decision.fetch else {
            if let keys = decision.keys { return keys }
            throw .fetchFailed(decision.error ?? "the identity provider's keys are being fetched; retry shortly")
        }
        fetches.withLock { $0 += 1 }
        let result: Result<(KeySet, Duration), KeySetError>
        do { result = .success(try fetch(issuer)) } catch { result = .failure(error) }
        let done = clock.now()
        let outcome: Result<KeySet, KeySetError> = entries.withLock { entries in
            var entry = entries[issuer.name].flatMap { $0.configuration == configuration ? $0 : nil } ?? Entry(configuration: configuration)
            defer { entries[issuer.name] = entry }
            entry.fetching = false
            switch result {
            case .success(let (keys, lifetime)):
                entry.keys = keys
                entry.expiresAt = done + lifetime
                entry.lastError = nil
                return .success(keys)
            case .failure(let error):
                entry.lastError = error.description
                // The previous set stays in use until a new one loads, for at most a day past
                // its lifetime: a key the provider withdrew is not trusted forever because the
                // provider cannot be reached.
                if let keys = entry.keys, done < entry.expiresAt + Self.maximumStaleness { return .success(keys) }
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// An operator's static set, parsed once per text (it is stored with the issuer's row).
    private func staticSet(_ json: String, of name: String) throws(KeySetError) -> KeySet {
        let configuration = "static\u{0}" + json
        if let keys = entries.withLock({ $0[name].flatMap { $0.configuration == configuration ? $0.keys : nil } }) { return keys }
        let keys = try KeySet(json: Array(json.utf8))
        entries.withLock { $0[name] = Entry(configuration: configuration, keys: keys) }
        return keys
    }

    /// Discovery (OIDC Discovery §4; its `issuer` must be the configured one exactly, §4.3),
    /// then the key set at its `jwks_uri` (https only), with the set's cache lifetime.
    private func fetch(_ issuer: IdentityIssuer) throws(KeySetError) -> (KeySet, Duration) {
        let discovery = try fetcher.get(issuer.discoveryURL, caPEM: issuer.caPEM)
        let node: JSONNode
        do { node = try StrictJSONParser.parse(discovery.body) } catch {
            throw .malformed("\(issuer.discoveryURL) is not valid JSON")
        }
        guard let metadata = node.object else { throw .malformed("\(issuer.discoveryURL) is not a JSON object") }
        guard metadata["issuer"]?.string == issuer.issuer else {
            throw .malformed("\(issuer.discoveryURL) names another issuer (OIDC Discovery §4.3 requires \(issuer.issuer))")
        }
        guard let jwksURI = metadata["jwks_uri"]?.string else { throw .malformed("\(issuer.discoveryURL) has no jwks_uri") }
        guard jwksURI.hasPrefix("https://") else { throw .malformed("the jwks_uri \(jwksURI) is not an https URL") }
        let answer = try fetcher.get(jwksURI, caPEM: issuer.caPEM)
        let keys = try KeySet(json: answer.body)
        return (keys, CachePolicy.lifetime(cacheControl: answer.cacheControl))
    }
}

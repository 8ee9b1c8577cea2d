/// Counts failed logins and says when to refuse one, so that guessing is slow and nobody can
/// lock someone else out (docs/security.md, finding 4; OWASP's Authentication and Credential
/// Stuffing Prevention cheat sheets).
///
/// Three counters, each with its own limit: a failure counts for the pair (username, address),
/// for the address whatever the username, and for the username whatever the address. After a
/// counter's limit of failures, each within `window` of the previous one, its key is blocked
/// for `baseDelay`, doubling with every further failure up to `maxDelay`.
///
/// - The pair is the tight limit (5): one address guessing one account.
/// - The address limit (20) catches one address spraying many accounts; it is higher because
///   many honest users share an address (carrier NAT, an office).
/// - The username limit (100) is a ceiling for a guess spread over many addresses, and it does
///   not apply to an address the account knows (one it logged in from successfully before).
///   So an attacker who fails from many addresses blocks strangers, not the owner at home.
///   A known address is not held to the address limit either: a sprayer on a shared address
///   (an office, a carrier NAT) does not block the account holders who use it. The pair limit
///   always applies: an attacker behind the owner's own address slows the owner there, which
///   no counter can avoid without a device secret (device-bound chains, issue 19).
/// - A device id is not a secret (verify returns it; it travels in every request), so it earns
///   no exemption. An IPv6 address counts by its /64, the block a single host can choose from.
///
/// A throttled attempt hashes no password and does not extend the block. A success clears the
/// pair's count (not the address's: one address spraying many users stays counted; not the
/// username's: the owner logging in must not reset an attacker's budget). Step-up is not
/// throttled here: a live chain has its own limits (`StepUpLimit`, `Policy.maxConfirmFailures`).
/// Pure state with an injected time; the store guards it with a lock.
package struct LoginThrottle: Sendable {
    /// Failures before a block, per counter.
    package var pairLimit = 5
    package var addressLimit = 20
    package var usernameLimit = 100
    package var window: Duration = .seconds(15 * 60)
    package var baseDelay: Duration = .seconds(60)
    package var maxDelay: Duration = .seconds(3600)
    /// Entries kept at most; beyond it, entries idle for a whole window are forgotten.
    package var capacity = 100_000
    /// Addresses remembered per account as "known" (the most recent ones).
    package var familiarPerUser = 16

    private struct Entry: Sendable {
        var failures = 0
        var lastFailure = Instant(milliseconds: 0)
        var blockedUntil = Instant(milliseconds: 0)
    }

    private var entries: [String: Entry] = [:]
    /// Per case-folded username: the address groups of its successful logins, most recent last.
    private var familiar: [String: [String]] = [:]

    package init() {}

    /// How long the caller must wait, or nil when the attempt may proceed.
    package func retryAfter(username: String, ip: String?, now: Instant) -> Duration? {
        var keys = keys(username: username, ip: ip)
        // The owner's own address is held neither to the ceiling others' failures reached nor
        // to a sprayer's failures from the same address; the pair limit stays.
        if isFamiliar(username: username, ip: ip) { keys.removeAll { !$0.key.hasPrefix("pair:") } }
        let waits = keys.compactMap { key -> Duration? in
            guard let entry = entries[key.key], now < entry.blockedUntil else { return nil }
            return entry.blockedUntil - now
        }
        return waits.max()
    }

    /// Counts a failed password check.
    package mutating func recordFailure(username: String, ip: String?, now: Instant) {
        if entries.count >= capacity { forgetIdle(now: now) }
        for (key, limit) in keys(username: username, ip: ip) {
            var entry = entries[key] ?? Entry()
            if now - entry.lastFailure >= window { entry.failures = 0 }
            entry.failures += 1
            entry.lastFailure = now
            if entry.failures >= limit {
                let doublings = min(entry.failures - limit, 20)
                entry.blockedUntil = now + min(baseDelay * (1 << doublings), maxDelay)
            }
            entries[key] = entry
        }
    }

    /// A login that succeeded (committed, not only a right password): clears the pair's count
    /// and remembers the address as known to the account.
    package mutating func recordSuccess(username: String, ip: String?) {
        entries[Self.pairKey(username, ip)] = nil
        guard let ip else { return }
        let user = Self.fold(username), group = AddressGroup.key(ip)
        if familiar[user] == nil, familiar.count >= capacity { familiar.removeAll(keepingCapacity: true) }
        var known = familiar[user] ?? []
        known.removeAll { $0 == group }
        known.append(group)
        familiar[user] = Array(known.suffix(familiarPerUser))
    }

    /// The bytes of every key this throttle holds (its entries' and known addresses'), for the
    /// tests of its memory bound.
    package var keyBytes: Int {
        entries.keys.reduce(0) { $0 + $1.utf8.count } + familiar.reduce(0) { $0 + $1.key.utf8.count + $1.value.reduce(0) { $0 + $1.utf8.count } }
    }

    /// Whether a login to this account succeeded from the address (its group) before.
    package func isFamiliar(username: String, ip: String?) -> Bool {
        guard let ip, let known = familiar[Self.fold(username)] else { return false }
        return known.contains(AddressGroup.key(ip))
    }

    /// The counters a failure of `username` from `ip` moves, with their limits. Without an
    /// address (a caller inside the process), the pair is the username alone.
    private func keys(username: String, ip: String?) -> [(key: String, limit: Int)] {
        var keys = [(Self.pairKey(username, ip), pairLimit), ("user:" + Self.fold(username), usernameLimit)]
        if let ip { keys.append(("ip:" + AddressGroup.key(ip), addressLimit)) }
        return keys
    }

    private static func pairKey(_ username: String, _ ip: String?) -> String {
        "pair:" + (ip.map(AddressGroup.key) ?? "") + "\u{0}" + fold(username)
    }

    /// Usernames are ASCII (`LoginRequest.validateUsername`) and compared case-insensitively in
    /// ASCII only, as both stores compare them: Swift's `lowercased()` would map `İ` elsewhere.
    private static func fold(_ username: String) -> String {
        String(decoding: username.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }

    private mutating func forgetIdle(now: Instant) {
        entries = entries.filter { now - $0.value.lastFailure < window || now < $0.value.blockedUntil }
    }
}

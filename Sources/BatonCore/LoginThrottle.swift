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
///   not apply to a caller the account knows: an address or a device id that logged in to it
///   successfully before. So an attacker who fails from many addresses blocks strangers, never
///   the owner's own phone or network.
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
    /// Addresses and device ids remembered per account as "known" (the most recent ones).
    package var familiarPerUser = 16

    private struct Entry: Sendable {
        var failures = 0
        var lastFailure = Instant(milliseconds: 0)
        var blockedUntil = Instant(milliseconds: 0)
    }

    private var entries: [String: Entry] = [:]
    /// Per lowercased username: the addresses (`ip:…`) and devices (`device:…`) of its
    /// successful logins, most recent last.
    private var familiar: [String: [String]] = [:]

    package init() {}

    /// How long the caller must wait, or nil when the attempt may proceed.
    package func retryAfter(username: String, ip: String?, deviceID: String? = nil, now: Instant) -> Duration? {
        var keys = keys(username: username, ip: ip)
        // The owner's own address or device is not held to the ceiling others' failures reached.
        if isFamiliar(username: username, ip: ip, deviceID: deviceID) { keys.removeAll { $0.key.hasPrefix("user:") } }
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

    /// A successful login: clears the pair's count and remembers the address and device as
    /// known to the account.
    package mutating func recordSuccess(username: String, ip: String?, deviceID: String? = nil) {
        entries[Self.pairKey(username, ip)] = nil
        let user = username.lowercased()
        if familiar[user] == nil, familiar.count >= capacity { familiar.removeAll(keepingCapacity: true) }
        var known = familiar[user] ?? []
        for marker in [ip.map { "ip:" + $0 }, deviceID.map { "device:" + $0 }].compactMap({ $0 }) {
            known.removeAll { $0 == marker }
            known.append(marker)
        }
        familiar[user] = Array(known.suffix(familiarPerUser))
    }

    /// Whether the address or the device logged in to this account successfully before.
    package func isFamiliar(username: String, ip: String?, deviceID: String?) -> Bool {
        guard let known = familiar[username.lowercased()] else { return false }
        return (ip.map { known.contains("ip:" + $0) } ?? false) || (deviceID.map { known.contains("device:" + $0) } ?? false)
    }

    /// The counters a failure of `username` from `ip` moves, with their limits. Without an
    /// address (a caller inside the process), the pair is the username alone.
    private func keys(username: String, ip: String?) -> [(key: String, limit: Int)] {
        var keys = [(Self.pairKey(username, ip), pairLimit), ("user:" + username.lowercased(), usernameLimit)]
        if let ip { keys.append(("ip:" + ip, addressLimit)) }
        return keys
    }

    private static func pairKey(_ username: String, _ ip: String?) -> String { "pair:" + (ip ?? "") + "\u{0}" + username.lowercased() }

    private mutating func forgetIdle(now: Instant) {
        entries = entries.filter { now - $0.value.lastFailure < window || now < $0.value.blockedUntil }
    }
}

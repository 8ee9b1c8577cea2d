import BatonCore
import BatonSync

/// The `jti` values of accepted proofs, each remembered for the replay window (RFC 9449
/// §11.1), so that a proof is accepted once. Thread-safe (one pthread mutex; each call is a
/// hash lookup and an append).
///
/// Bounded: at most `capacity` entries, each a fixed 16 bytes of key (a hash of the key's
/// thumbprint and the `jti`, so neither a long `jti` nor many of them can grow an entry)
/// and its expiry. When the cache is full of entries that have not expired, a new proof is
/// refused (`.full`), never remembered by forgetting another: forgetting would let an
/// attacker who can make valid proofs flood the cache and then replay a proof he captured
/// (for a bound chain, a replayed exchange would be a lost-response retry). Only a proof by
/// the key of the live chain it presents (or of a login with the right password) reaches the
/// cache (`ProofReplayClaim`), so proofs by keys of anyone's making cannot fill it.
///
/// Shared: one key holds at most `share` entries, and once three quarters of the cache are
/// taken, a key holding an eighth of its share or more is refused too (`.overShare`): the last
/// quarter is kept for keys that hold little. So one device (or one account's few chains)
/// flooding with its own key is refused alone, and filling the cache for everyone takes
/// hundreds of live chains (docs/dpop.md, "The replay cache"; issue 28, finding 1).
package final class ReplayCache: Sendable {
    /// What `remember` found.
    package enum Outcome: Equatable, Sendable {
        /// Not seen within the window; remembered now.
        case fresh
        /// Seen within the window: a replay.
        case replayed
        /// Not seen, but the cache is full: not remembered, so not to be accepted.
        case full
        /// Not seen, but this key holds its share already: not remembered, so not to be
        /// accepted; other keys are not affected.
        case overShare
    }

    /// Entries kept at most.
    package let capacity: Int
    /// Entries one key may hold at most.
    package let share: Int
    /// How long an entry is kept.
    package let window: Duration
    private let state: Locked<State>

    /// A cache of at most `capacity` entries, each kept for `window`. Size it for the peak
    /// rate of accepted proofs times the window: the default holds 7,000 proofs a second for
    /// the default 70-s window, in about 47 MiB when full (99 bytes an entry with its key's
    /// share account, measured by baton-dpop-bench; 75 before the shares). `share` (default:
    /// a 256th of the capacity, at least 16, at most the capacity) is what one key may hold:
    /// the default, 1,953 entries, is 27 proofs a second by one device over the 70-s window.
    package init(capacity: Int = 500_000, share: Int? = nil, window: Duration) {
        precondition(capacity > 0 && window > .zero)
        self.capacity = capacity
        self.share = min(capacity, max(1, share ?? max(16, capacity / 256)))
        self.window = window
        state = Locked(State())
    }

    /// Above this many entries, only keys holding fewer than `reserveShare` are remembered;
    /// a share of the whole capacity turns shares off, the reserve with them.
    private var reserveFrom: Int { share < capacity ? capacity - capacity / 4 : capacity }
    /// What a key may hold and still take a place in the last quarter.
    private var reserveShare: Int { max(1, share / 8) }

    /// Records the proof `jti` by the key `thumbprint` at `now`, unless it is there already.
    package func remember(_ jti: String, of thumbprint: Thumbprint, now: Instant) -> Outcome {
        remember(digest: Self.digest(jti, of: thumbprint), of: thumbprint, now: now)
    }

    /// `remember` for the proof whose `digest(jti, of: thumbprint)` is `digest` (a claim has
    /// it already).
    package func remember(digest: [UInt8], of thumbprint: Thumbprint, now: Instant) -> Outcome {
        let key = Key(digest: digest, thumbprint: thumbprint)
        let owner = key.owner
        let expiry = (now + window).milliseconds + 1  // kept through the window's last millisecond, which the age check still accepts
        return state.withLock { state in
            state.evict(before: now.milliseconds)
            if let existing = state.expiries[key], existing > now.milliseconds { return .replayed }
            guard state.expiries.count < capacity else { return .full }
            let held = state.held[owner, default: 0]
            // The key's own share: a key over it is refused while others still take places, so
            // a flood by one key is refused alone and never fills the cache.
            if held >= share || (state.expiries.count >= reserveFrom && held >= reserveShare) { return .overShare }
            state.expiries[key] = expiry
            // `held` counts queue entries: a key re-added after its expiry (a clock stepped
            // back) counts twice until the queue drops the old entry.
            state.held[owner, default: 0] += 1
            state.queue.append(Entry(key: key, expiry: expiry))
            return .fresh
        }
    }

    /// Entries held now (expired ones go at the next `remember`).
    package var count: Int { state.withLock { $0.expiries.count } }

    /// Entries `thumbprint`'s key holds now.
    package func held(by thumbprint: Thumbprint) -> Int {
        let owner = Key.owner(of: thumbprint)
        return state.withLock { $0.held[owner, default: 0] }
    }

    /// SHA-256(thumbprint ‖ jti): what names a proof in the cache (and in a `ProofReplayClaim`).
    package static func digest(_ jti: String, of thumbprint: Thumbprint) -> [UInt8] {
        Digest.sha256(thumbprint.bytes + Array(jti.utf8))
    }

    /// 128 bits of `digest`, SHA-256(thumbprint ‖ jti): collisions are out of reach, and an
    /// entry's size does not depend on the client. `owner`, the key's share account, is the
    /// thumbprint's first 64 bits (a thumbprint is itself a SHA-256).
    private struct Key: Hashable {
        let high: UInt64
        let low: UInt64
        let owner: UInt64

        init(digest: [UInt8], thumbprint: Thumbprint) {
            precondition(digest.count == 32)
            high = digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
            owner = Self.owner(of: thumbprint)
        }

        /// The share account of `thumbprint`'s key: its first 64 bits.
        static func owner(of thumbprint: Thumbprint) -> UInt64 { thumbprint.bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
    }

    private struct Entry {
        let key: Key
        let expiry: Int64
    }

    /// The entries by key, and the same entries in the order they were added: every entry
    /// lives the same `window`, so that is the order they expire in.
    private struct State {
        var expiries: [Key: Int64] = [:]
        /// Queue entries per owner (the key's share account); an owner at zero is removed.
        var held: [UInt64: Int] = [:]
        var queue: [Entry] = []
        var head = 0

        mutating func evict(before now: Int64) {
            while head < queue.count, queue[head].expiry <= now {
                let entry = queue[head]
                // A key re-added after its expiry (a clock stepped back) has a newer entry.
                if expiries[entry.key] == entry.expiry { expiries[entry.key] = nil }
                let left = held[entry.key.owner, default: 1] - 1
                held[entry.key.owner] = left > 0 ? left : nil
                head += 1
            }
            // Drop the consumed front once it is half the array: amortized O(1) per entry,
            // and the array stays under twice the entries held.
            if head > 1024, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }
    }
}

import BatonCore
import BatonSync
import Synchronization

/// Each bound chain's budget of failed proof signatures (issue 28, finding 3).
///
/// A verify's proof by the chain's key costs the server one signature check (about 90 µs of
/// CPU, where a whole bearer verify costs a few); anyone holding the chain's token can send
/// proofs under its public key (every proof the device sends shows it) with signatures that do
/// not verify, as fast as they can, and take the event loops from everybody. A token bucket per
/// chain bounds that: a chain may fail `burst` checks at once and `perSecond` more each second;
/// past that its proofs are refused unchecked (429 `too_many_attempts`, with `Retry-After`)
/// until the bucket has refilled a check. Only failures spend: a device whose proofs verify is
/// never limited, and a chain nobody attacks has no bucket at all. While a thief floods a
/// chain, that chain's own proofs are refused as often as the thief's (it holds the token: the
/// session is compromised, and the flood is in its audit); no other chain is.
///
/// The hot path takes no lock while no chain has a bucket (one relaxed atomic load). Memory is
/// bounded: at most `capacity` chains are tracked; full buckets are forgotten.
package final class ProofSignatureBudget: Sendable {
    /// Failed checks a chain may have at once.
    package let burst: Double
    /// Failed checks a chain regains each second.
    package let perSecond: Double
    /// Chains tracked at most.
    package let capacity: Int
    private let tracked = Atomic<Int>(0)
    private let buckets = Locked<[ChainID: Bucket]>([:])

    package init(burst: Int = 20, perSecond: Int = 5, capacity: Int = 100_000) {
        precondition(burst > 0 && perSecond > 0 && capacity > 0)
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
        self.capacity = capacity
    }

    /// Whether no chain has failed a check lately: then every proof is checked, and
    /// `refusal(for:at:)` answers nil without a lock (the caller need not even read the clock).
    package var isIdle: Bool { tracked.load(ordering: .relaxed) == 0 }

    /// The refusal for a proof of `chain` at `now` when the chain has no failed check left to
    /// spend, or nil to check the proof.
    package func refusal(for chain: ChainID, at now: Instant) -> BatonError? {
        guard !isIdle else { return nil }
        return buckets.withLock { buckets -> BatonError? in
            guard var bucket = buckets[chain] else { return nil }
            bucket.refill(at: now, burst: burst, perSecond: perSecond)
            if bucket.tokens >= burst {
                buckets[chain] = nil
                tracked.store(buckets.count, ordering: .relaxed)
                return nil
            }
            buckets[chain] = bucket
            guard bucket.tokens < 1 else { return nil }
            let seconds = ((1 - bucket.tokens) / perSecond).rounded(.up)
            return .tooManyRefusedProofs(retryAfterSeconds: max(1, Int64(seconds)))
        }
    }

    /// Spends one of `chain`'s failed checks at `now`.
    package func noteFailure(of chain: ChainID, at now: Instant) {
        buckets.withLock { buckets in
            var bucket = buckets[chain] ?? Bucket(tokens: burst, at: now)
            if buckets[chain] == nil, buckets.count >= capacity {
                forgetFull(&buckets, at: now)
                guard buckets.count < capacity else { return }  // tracked enough attackers; this one goes unlimited
            }
            bucket.refill(at: now, burst: burst, perSecond: perSecond)
            bucket.tokens -= 1
            buckets[chain] = bucket
            tracked.store(buckets.count, ordering: .relaxed)
        }
    }

    /// Chains with a bucket (for tests and metrics).
    package var trackedChains: Int { buckets.withLock { $0.count } }

    /// The budget `SignatureBudget` the proof's check asks, for `chain` at `now`.
    package func budget(for chain: ChainID, at now: Instant) -> SignatureBudget {
        SignatureBudget(refusal: { self.refusal(for: chain, at: now) }, noteFailure: { self.noteFailure(of: chain, at: now) })
    }

    private func forgetFull(_ buckets: inout [ChainID: Bucket], at now: Instant) {
        buckets = buckets.filter { _, bucket in
            var bucket = bucket
            bucket.refill(at: now, burst: burst, perSecond: perSecond)
            return bucket.tokens < burst
        }
    }

    private struct Bucket {
        var tokens: Double
        var at: Instant

        mutating func refill(at now: Instant, burst: Double, perSecond: Double) {
            guard at < now else { return }
            tokens = min(burst, tokens + Double((now - at).wholeMilliseconds) / 1000 * perSecond)
            at = now
        }
    }
}

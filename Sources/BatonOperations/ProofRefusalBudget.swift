import BatonCore
import BatonSync
import Synchronization

/// Each bound chain's budget of refused DPoP proofs (issue 28, finding 3).
///
/// Anyone holding a bound chain's token can send proofs for it that the server refuses, as
/// fast as they can: by another key, or under the chain's own public key (every proof the
/// device sends shows it) with a signature that does not verify. Each costs the server the
/// proof's parsing, and for the second kind a signature check (about 90 µs of CPU, where a
/// whole bearer verify costs a few): 32 connections of them took another user's verify p50
/// from 0.06 to 6-7 ms. A token bucket per chain bounds that: a chain may have `burst` proofs
/// refused at once and `perSecond` more each second; past that, verify refuses its proofs
/// before even parsing them (429 `too_many_attempts`, with `Retry-After`) until the bucket
/// has refilled one. Only refusals spend: a device whose proofs pass is never limited, and a
/// chain nobody attacks has no bucket at all. While a thief floods a chain, the chain's own
/// device is refused as often as the thief (who holds its token: the session is compromised,
/// and the flood is in its audit); no other chain is.
///
/// The hot path takes no lock while no chain has a bucket (one relaxed atomic load). Memory is
/// bounded: at most `capacity` chains are tracked; full buckets are forgotten.
package final class ProofRefusalBudget: Sendable {
    /// Chains tracked at most.
    package let capacity: Int
    private let tracked = Atomic<Int>(0)
    private let state: Locked<State>

    /// A budget of `burst` refusals at once (0: none, every proof is checked) and `perSecond`
    /// more each second (`--dpop-refusal-burst`, `--dpop-refusal-rate`).
    package init(burst: Int = 20, perSecond: Int = 5, capacity: Int = 100_000) {
        precondition(capacity > 0)
        self.capacity = capacity
        state = Locked(State(burst: 0, perSecond: 1))
        configure(burst: burst, perSecond: perSecond)
    }

    /// Sets the budget (at start, before any request); forgets every bucket.
    package func configure(burst: Int, perSecond: Int) {
        precondition(burst >= 0 && perSecond > 0)
        state.withLock { state in
            state = State(burst: Double(burst), perSecond: Double(perSecond))
            tracked.store(0, ordering: .relaxed)
        }
    }

    /// Whether no chain has had a proof refused lately: then every proof is checked, and
    /// `refusal(for:at:)` answers nil without a lock (the caller need not even read the clock).
    package var isIdle: Bool { tracked.load(ordering: .relaxed) == 0 }

    /// The refusal for a proof of `chain` at `now` when the chain has no refusal left to
    /// spend, or nil to check the proof.
    package func refusal(for chain: ChainID, at now: Instant) -> BatonError? {
        guard !isIdle else { return nil }
        return state.withLock { state -> BatonError? in
            // Every bucket has refilled by now: forget them all, so that verify goes back to
            // taking no lock (a chain refused once and never seen again must not keep every
            // other chain's verify on this lock).
            if state.fullAgainAt <= now {
                state.buckets = [:]
                tracked.store(0, ordering: .relaxed)
                return nil
            }
            guard var bucket = state.buckets[chain] else { return nil }
            bucket.refill(at: now, state)
            if bucket.tokens >= state.burst {
                state.buckets[chain] = nil
                tracked.store(state.buckets.count, ordering: .relaxed)
                return nil
            }
            state.buckets[chain] = bucket
            guard bucket.tokens < 1 else { return nil }
            let seconds = ((1 - bucket.tokens) / state.perSecond).rounded(.up)
            return .tooManyRefusedProofs(retryAfterSeconds: max(1, Int64(seconds)))
        }
    }

    /// Spends one of `chain`'s refusals at `now`.
    package func noteRefusal(of chain: ChainID, at now: Instant) {
        state.withLock { state in
            guard state.burst > 0 else { return }
            if state.buckets[chain] == nil, state.buckets.count >= capacity {
                state.forgetFull(at: now)
                guard state.buckets.count < capacity else { return }  // tracked enough attackers; this one goes unlimited
            }
            var bucket = state.buckets[chain] ?? Bucket(tokens: state.burst, at: now)
            bucket.refill(at: now, state)
            bucket.tokens -= 1
            state.buckets[chain] = bucket
            let refilledIn = Duration.milliseconds(Int64(((state.burst - bucket.tokens) / state.perSecond * 1000).rounded(.up)))
            state.fullAgainAt = max(state.fullAgainAt, now + refilledIn)
            tracked.store(state.buckets.count, ordering: .relaxed)
        }
    }

    /// Chains with a bucket (for tests and metrics).
    package var trackedChains: Int { state.withLock { $0.buckets.count } }

    private struct State {
        var burst: Double
        var perSecond: Double
        var buckets: [ChainID: Bucket] = [:]
        /// When the last bucket will have refilled (no refusal since): past it, none is needed.
        var fullAgainAt = Instant(milliseconds: .min)

        mutating func forgetFull(at now: Instant) {
            let state = self
            buckets = buckets.filter { _, bucket in
                var bucket = bucket
                bucket.refill(at: now, state)
                return bucket.tokens < state.burst
            }
        }
    }

    private struct Bucket {
        var tokens: Double
        var at: Instant

        mutating func refill(at now: Instant, _ state: State) {
            guard at < now else { return }
            tokens = min(state.burst, tokens + Double((now - at).wholeMilliseconds) / 1000 * state.perSecond)
            at = now
        }
    }
}

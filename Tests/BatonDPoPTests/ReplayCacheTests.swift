import BatonCore
@testable import BatonDPoP
import Dispatch
import Testing

/// The `jti` replay cache: once per window, bounded, thread-safe.
struct ReplayCacheTests {
    let start = Instant(milliseconds: 1_790_000_000_000)
    let key = ES256SigningKey.generate().thumbprint

    @Test func proofIsFreshOnceWithinTheWindow() {
        let cache = ReplayCache(capacity: 10, window: .seconds(70))
        #expect(cache.remember("a", of: key, now: start) == .fresh)
        #expect(cache.remember("a", of: key, now: start + .seconds(69)) == .replayed)
        #expect(cache.remember("a", of: ES256SigningKey.generate().thumbprint, now: start) == .fresh)  // another key's jti
    }

    /// A claim remembers by its digest (`ProofChecker`), a direct call by the `jti`: one proof
    /// is one entry either way, and another key's proof with the same `jti` is another.
    @Test func aProofRememberedByItsDigestIsTheSameEntryAsByItsJTI() {
        let cache = ReplayCache(capacity: 10, window: .seconds(70))
        #expect(cache.remember(digest: ReplayCache.digest("a", of: key), of: key, now: start) == .fresh)
        #expect(cache.remember("a", of: key, now: start) == .replayed)
        #expect(cache.remember("b", of: key, now: start) == .fresh)
        #expect(cache.remember(digest: ReplayCache.digest("b", of: key), of: key, now: start) == .replayed)
        let other = ES256SigningKey.generate().thumbprint
        #expect(cache.remember(digest: ReplayCache.digest("a", of: other), of: other, now: start) == .fresh)
        #expect(cache.held(by: key) == 2)
    }

    @Test func entryExpiresWithTheWindow() {
        let cache = ReplayCache(capacity: 10, window: .seconds(70))
        #expect(cache.remember("a", of: key, now: start) == .fresh)
        // Still a replay in the window's last millisecond, which the proof's age check still
        // accepts (a proof issued 10 s ahead and replayed 70 s later; the review's finding 5).
        #expect(cache.remember("a", of: key, now: start + .seconds(70)) == .replayed)
        let after = start + .seconds(70) + .milliseconds(1)
        #expect(cache.remember("b", of: key, now: after) == .fresh)
        #expect(cache.count == 1)  // "a" went when "b" came
        #expect(cache.remember("a", of: key, now: after) == .fresh)
    }

    @Test func fullCacheRefusesRatherThanForgets() {
        // Three keys, one proof each: no key is over its share, the cache is full.
        let cache = ReplayCache(capacity: 3, window: .seconds(70))
        let keys = (0..<4).map { _ in ES256SigningKey.generate().thumbprint }
        for index in 0..<3 { #expect(cache.remember("a", of: keys[index], now: start) == .fresh) }
        #expect(cache.remember("a", of: keys[3], now: start + .seconds(1)) == .full)
        // Nothing was forgotten to make room: every remembered proof is still a replay.
        for index in 0..<3 { #expect(cache.remember("a", of: keys[index], now: start + .seconds(1)) == .replayed) }
        // Room again once the first entries expire.
        #expect(cache.remember("a", of: keys[3], now: start + .seconds(70) + .milliseconds(1)) == .fresh)
    }

    @Test func memoryStaysBoundedUnderAFlood() {
        let cache = ReplayCache(capacity: 1000, share: 1000, window: .seconds(10))
        var refused = 0
        for index in 0..<20_000 {
            // 1000 proofs a second for 20 s against room for 100 a second.
            if cache.remember("jti-\(index)", of: key, now: start + .milliseconds(Int64(index))) != .fresh { refused += 1 }
            #expect(cache.count <= 1000)
        }
        #expect(refused > 0)
    }

    /// Issue 28, finding 1: one key flooding with proofs it is entitled to is refused at its
    /// share, and the others still take places.
    @Test func oneKeyOverItsShareIsRefusedAlone() {
        let cache = ReplayCache(capacity: 100, share: 10, window: .seconds(70))
        for index in 0..<10 { #expect(cache.remember("jti-\(index)", of: key, now: start) == .fresh) }
        #expect(cache.remember("jti-10", of: key, now: start) == .overShare)
        #expect(cache.held(by: key) == 10)
        let other = ES256SigningKey.generate().thumbprint
        #expect(cache.remember("jti-10", of: other, now: start) == .fresh)
        // The flood's entries expire like any: the key has room again after the window.
        #expect(cache.remember("jti-11", of: key, now: start + .seconds(70) + .milliseconds(1)) == .fresh)
        #expect(cache.held(by: key) == 1)
    }

    /// Once three quarters are taken, the last quarter is for keys holding less than an eighth
    /// of their share: many keys each at their share cannot take it.
    @Test func lastQuarterIsKeptForKeysHoldingLittle() {
        let cache = ReplayCache(capacity: 80, share: 16, window: .seconds(70))
        let heavy = (0..<4).map { _ in ES256SigningKey.generate().thumbprint }
        var outcomes: [ReplayCache.Outcome] = []
        for key in heavy { for index in 0..<16 { outcomes.append(cache.remember("j\(index)", of: key, now: start)) } }
        // 60 places are the heavy keys' (the fourth gets 12 of its 16 before the quarter).
        #expect(outcomes.filter { $0 == .fresh }.count == 60)
        #expect(outcomes.filter { $0 == .overShare }.count == 4)
        // A key holding 1 (less than 16 / 8) still gets a place, until it holds 2.
        let light = ES256SigningKey.generate().thumbprint
        #expect(cache.remember("a", of: light, now: start) == .fresh)
        #expect(cache.remember("b", of: light, now: start) == .fresh)
        #expect(cache.remember("c", of: light, now: start) == .overShare)
    }

    @Test func concurrentCopiesOfOneProofAreFreshOnce() async {
        let cache = ReplayCache(capacity: 100_000, share: 100_000, window: .seconds(70))
        let fresh = await withTaskGroup(of: Int.self) { group in
            for thread in 0..<8 {
                group.addTask {
                    var count = 0
                    for index in 0..<2000 where cache.remember("jti-\(index)", of: key, now: start + .milliseconds(Int64(thread))) == .fresh {
                        count += 1
                    }
                    return count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(fresh == 2000)
        #expect(cache.count == 2000)
    }
}

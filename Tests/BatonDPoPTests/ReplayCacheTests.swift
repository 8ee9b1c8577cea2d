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
        let cache = ReplayCache(capacity: 3, window: .seconds(70))
        for jti in ["a", "b", "c"] { #expect(cache.remember(jti, of: key, now: start) == .fresh) }
        #expect(cache.remember("d", of: key, now: start + .seconds(1)) == .full)
        // Nothing was forgotten to make room: every remembered proof is still a replay.
        for jti in ["a", "b", "c"] { #expect(cache.remember(jti, of: key, now: start + .seconds(1)) == .replayed) }
        // Room again once the first entries expire.
        #expect(cache.remember("d", of: key, now: start + .seconds(70) + .milliseconds(1)) == .fresh)
    }

    @Test func memoryStaysBoundedUnderAFlood() {
        let cache = ReplayCache(capacity: 1000, window: .seconds(10))
        var refused = 0
        for index in 0..<20_000 {
            // 1000 proofs a second for 20 s against room for 100 a second.
            if cache.remember("jti-\(index)", of: key, now: start + .milliseconds(Int64(index))) == .full { refused += 1 }
            #expect(cache.count <= 1000)
        }
        #expect(refused > 0)
    }

    @Test func concurrentCopiesOfOneProofAreFreshOnce() async {
        let cache = ReplayCache(capacity: 100_000, window: .seconds(70))
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

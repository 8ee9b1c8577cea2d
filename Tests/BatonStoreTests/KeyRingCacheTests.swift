@testable import BatonCore
@testable import BatonOperations
import BatonStorage
import Synchronization
import Testing

/// `KeyRingCache`'s two rules on a manual monotonic clock, without a database (issue 43,
/// finding 1): a key mints only once this process has known it for the activation delay, and
/// a token naming an unknown key id is decided from memory: refused while the copy is young,
/// `unavailable` (never a refusal) once it is too old to tell.
@Suite struct KeyRingCacheTests {
    /// A monotonic clock the test moves.
    final class ManualMonotonic: Sendable {
        let nanoseconds = Atomic<Int64>(1_000_000_000_000)
        func advance(_ seconds: Double) { nanoseconds.add(Int64(seconds * 1e9), ordering: .relaxed) }
    }

    static let wallNow = Instant(milliseconds: 1_800_000_000_000)
    let fileKey = TokenKey.generate()
    let clock = ManualMonotonic()

    func cache() -> KeyRingCache {
        var timing = KeyRingCache.Timing()
        timing.watches = false
        let clock = clock
        timing.monotonicNow = { clock.nanoseconds.load(ordering: .relaxed) }
        return KeyRingCache(fileKey: fileKey, timing: timing)
    }

    func row(_ id: UInt32, createdAt: Instant) -> TokenKeyRow {
        if id == 0 { return TokenKeyRow(id: 0, wrapped: nil, fingerprint: fileKey.fingerprint, createdAt: createdAt) }
        let key = TokenKey.generate()
        return TokenKeyRow(id: id, wrapped: KeyWrap.wrap(key, id: id, under: fileKey), fingerprint: key.fingerprint, createdAt: createdAt)
    }

    @Test func aKeyAddedWhileRunningMintsOnlyAfterTheActivationDelay() throws {
        let ring = cache()
        let key0 = row(0, createdAt: Self.wallNow - .seconds(3600))
        try ring.reload(wallNow: Self.wallNow) { [key0] }
        #expect(ring.mintingCodec.mintingKeyID == 0)
        let key1 = row(1, createdAt: Self.wallNow)
        try ring.reload(wallNow: Self.wallNow) { [key0, key1] }
        // Key 1's tokens are accepted at once; it makes none for 2 s.
        let chain = ChainID(rawValue: 7)
        let early = ring.mintingCodec.issue(chainID: chain, generation: 0)
        #expect(early.keyID == 0)
        clock.advance(1.9)
        #expect(ring.mintingCodec.mintingKeyID == 0)
        clock.advance(0.2)
        let issued = ring.mintingCodec.issue(chainID: chain, generation: 1)
        #expect(issued.keyID == 1)
        #expect(try ring.authenticate(issued.text)?.generation == 1)
        #expect(try ring.authenticate(early.text)?.generation == 0)
        // A later read keeps the time key 1 was first known.
        try ring.reload(wallNow: Self.wallNow + .seconds(3)) { [key0, key1] }
        #expect(ring.mintingCodec.mintingKeyID == 1)
    }

    @Test func atAFirstReadOnlyAKeyOlderThanTheDelayAndTheSkewAllowanceMintsAtOnce() throws {
        let settled = cache()
        try settled.reload(wallNow: Self.wallNow) {
            [row(0, createdAt: Self.wallNow - .seconds(3600)), row(1, createdAt: Self.wallNow - .seconds(33))]
        }
        #expect(settled.mintingCodec.mintingKeyID == 1)

        let recent = cache()
        try recent.reload(wallNow: Self.wallNow) {
            [row(0, createdAt: Self.wallNow - .seconds(3600)), row(1, createdAt: Self.wallNow - .seconds(20))]
        }
        #expect(recent.mintingCodec.mintingKeyID == 0)  // another instance may not know key 1 yet
        clock.advance(2.1)
        #expect(recent.mintingCodec.mintingKeyID == 1)

        // Key 0 retired and key 1 just added: no key has waited its delay; the oldest not retired mints.
        let onlyNew = cache()
        var retired = row(0, createdAt: Self.wallNow - .seconds(3600))
        retired.retiredAt = Self.wallNow - .seconds(1)
        try onlyNew.reload(wallNow: Self.wallNow) { [retired, row(1, createdAt: Self.wallNow - .seconds(40)), row(2, createdAt: Self.wallNow)] }
        #expect(onlyNew.mintingCodec.mintingKeyID == 1)
    }

    @Test func anUnknownKeyIdIsRefusedFromAYoungCopyAndUnavailableFromAnOldOne() throws {
        let ring = cache()
        try ring.reload(wallNow: Self.wallNow) { [row(0, createdAt: Self.wallNow - .seconds(3600))] }
        let other = cache()
        try other.reload(wallNow: Self.wallNow) {
            [row(0, createdAt: Self.wallNow - .seconds(3600)), row(5, createdAt: Self.wallNow - .seconds(3600))]
        }
        let unknown = other.mintingCodec.issue(chainID: ChainID(rawValue: 1), generation: 0)
        #expect(unknown.keyID == 5)
        #expect(try ring.authenticate(unknown.text) == nil)
        clock.advance(1.4)
        #expect(try ring.authenticate(unknown.text) == nil)
        clock.advance(0.2)  // 1.6 s since the last read: too old to rule key 5 out
        #expect(throws: BatonError.self) { try ring.authenticate(unknown.text) }
        // A known key's forged MAC is refused whatever the copy's age: no key to wait for.
        var forged = Array(ring.codec.issue(chainID: ChainID(rawValue: 1), generation: 0).text)
        forged[forged.count - 2] = forged[forged.count - 2] == "A" ? "B" : "A"
        #expect(try ring.authenticate(String(forged)) == nil)
        // A read makes the copy young again.
        try ring.reload(wallNow: Self.wallNow) { [row(0, createdAt: Self.wallNow - .seconds(3600))] }
        #expect(try ring.authenticate(unknown.text) == nil)
    }
}

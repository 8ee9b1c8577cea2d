@testable import BatonCore
@testable import BatonOperations
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// The token key ring on both stores (docs/admin.md, "Rotating the token key"): a rotation
/// logs nobody out, every instance picks it up without a restart, and a key is retired only
/// once no live chain holds a token of it, or with `--force`, which revokes those chains with
/// a reason of their own.
@Suite(.serialized)
struct KeyRingTests {
    static func keys(_ store: Any) -> any KeyRingStore { store as! any KeyRingStore }

    /// Waits until `store` makes tokens with key `id`: a key mints once its instance has known
    /// it for `KeyRingCache.Timing.activationDelay` (2 s).
    static func awaitMinting(_ id: UInt32, _ store: Any) -> Bool {
        guard let ring = (store as? any LineageBackend)?.keyRing else { return false }
        return eventually(within: 10) { ring.mintingCodec.mintingKeyID == id }
    }

    @Test(arguments: Backend.allCases)
    func exchangingAnOldKeyTokenIssuesTheSuccessorUnderTheNewKey(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let first = try db.login()
            #expect(first.token.hasPrefix("bt1_"))
            let added = try Self.keys(db.store.base).rotateKey(context: .admin)
            #expect(added.id == 1 && added.wrapped?.count == KeyWrap.wrappedLength && added.retiredAt == nil)
            // Key 1 makes tokens once this instance has known it for the activation delay (2 s):
            // by then every other instance has read it too (KeyRingCache; the delay itself is
            // KeyRingCacheTests', on a manual clock: a login here may take 2 s on a loaded CI).
            #expect(Self.awaitMinting(1, db.store.base))
            // The bt1_ token still verifies, then exchanges for a bt2_ token of key 1.
            _ = try db.store.verify(first.token)
            let next = try db.store.exchange(first.token)
            #expect(next.token.hasPrefix("bt2_") && TokenCodec.claimedKeyID(next.token) == 1)
            _ = try db.store.verify(next.token)
            let statuses = try Self.keys(db.store.base).keyStatuses()
            #expect(statuses.map(\.row.id) == [0, 1])
            #expect(statuses.map(\.liveChains) == [0, 1])
            #expect(statuses.map(\.isMinting) == [false, true])
            #expect(try db.rows("SELECT head_key FROM chains") == [["1"]])
            let rotated = try db.auditEvents(kind: .keyRotated)
            #expect(rotated.count == 1 && rotated[0].detail.contains("\"key_id\":1") && rotated[0].detail.contains(added.fingerprint))
            // New logins use key 1 too.
            #expect(try db.login(device: "phone-2").token.hasPrefix("bt2_"))
        }
    }

    @Test(arguments: Backend.allCases)
    func anotherInstancePicksTheRotationUpWithoutARestart(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let other = try db.anotherStore()
        let idle = try db.anotherStore()
        defer { other.close(); idle.close() }
        try await offPool {
            let first = try db.login()
            let second = try db.login(device: "phone-2")
            let rotated = KeyRingCache.monotonicNow()
            _ = try Self.keys(other).rotateKey(context: .admin)
            // The instance that rotated mints with the new key after the activation delay; by
            // then the others' watchers have read the ring, so its first token of the new key
            // is accepted at once by an instance that never saw such a token.
            var fromOther = first.token
            while !fromOther.hasPrefix("bt2_") {
                fromOther = try other.exchange(fromOther, context: RequestContext()).token
                if KeyRingCache.monotonicNow() - rotated > 10_000_000_000 { break }
                usleep(50_000)
            }
            #expect(fromOther.hasPrefix("bt2_"), "still minting with key 0 10 s after the rotation")
            #expect(KeyRingCache.monotonicNow() - rotated >= 2_000_000_000, "minted with the new key before every instance could know it")
            _ = try db.store.verify(fromOther)
            _ = try db.store.exchange(fromOther)
            // An idle instance mints with the new key within poll + activation (3 s).
            var token = second.token
            while !token.hasPrefix("bt2_") {
                token = try idle.exchange(token, context: RequestContext()).token
                #expect(KeyRingCache.monotonicNow() - rotated < 4_500_000_000, "still minting with key 0 after 4.5 s")
                if KeyRingCache.monotonicNow() - rotated > 6_000_000_000 { break }
                usleep(100_000)
            }
            #expect(token.hasPrefix("bt2_"))
        }
    }

    @Test(arguments: Backend.allCases)
    func retiringAKeyThatLiveChainsHoldIsRefusedUnlessForced(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let held = try db.login()
            let keys = Self.keys(db.store.base)
            #expect(throws: BatonError.invalidArgument("key 0 (the key file's) is the only token key and makes every new token; run 'baton admin key rotate' first")) {
                try keys.retireKey(0, force: false, context: .admin)
            }
            _ = try keys.rotateKey(context: .admin)
            #expect(throws: BatonError.invalidArgument("token key 1 makes every new token; run 'baton admin key rotate' first")) {
                try keys.retireKey(1, force: true, context: .admin)
            }
            #expect(throws: BatonError.invalidArgument("there is no token key 7; see 'baton admin key list'")) {
                try keys.retireKey(7, force: true, context: .admin)
            }
            // Just superseded: an instance may still mint with it.
            do {
                _ = try keys.retireKey(0, force: true, context: .admin)
                Issue.record("retired a key superseded 0 s ago")
            } catch let error as BatonError {
                guard case .invalidArgument(let message) = error else { throw error }
                #expect(message.hasPrefix("token key 0 was superseded less than 5 seconds ago"))
            }
            db.clock.advance(by: .seconds(6))
            #expect(throws: BatonError.invalidArgument(
                "1 live chain holds a token of key 0; each moves to the newest key at its next exchange. Retry later (see 'baton admin key list'), or retire with --force to revoke them (reason key_retired: their users log in again)")) {
                try keys.retireKey(0, force: false, context: .admin)
            }
            _ = try db.store.verify(held.token)  // the refusal changed nothing
            let revoked = try keys.retireKey(0, force: true, context: .admin)
            #expect(revoked == [held.chainID])
            #expect(try db.rows("SELECT revoked_reason FROM chains") == [["key_retired"]])
            #expect(try db.auditEvents(kind: .chainRevoked).map(\.detail).allSatisfy { $0.contains("\"reason\":\"key_retired\"") })
            let retired = try db.auditEvents(kind: .keyRetired)
            #expect(retired.count == 1 && retired[0].detail.contains("\"revoked_chains\":1"))
            // A retired key's tokens are refused before any lookup.
            #expect(throws: BatonError.tokenInvalid) { try db.store.verify(held.token) }
            #expect(try keys.keyStatuses().map { $0.row.retiredAt != nil } == [true, false])
            #expect(throws: BatonError.self) { try keys.retireKey(0, force: true, context: .admin) }
        }
    }

    /// `baton admin key retire` says every instance refuses the key's tokens within 2 s: an
    /// instance that did not retire it (opened before, never told) stops accepting its MAC at
    /// its watcher's next read (issue 43's observations: it used to wait for its next reload).
    @Test(arguments: Backend.allCases)
    func aRetirementIsSeenByEveryInstanceWithinTwoSeconds(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let other = try db.anotherStore()
        defer { other.close() }
        try await offPool {
            let first = try db.login()
            let keys = Self.keys(db.store.base)
            _ = try keys.rotateKey(context: .admin)
            #expect(Self.awaitMinting(1, db.store.base))
            _ = try db.store.exchange(first.token)  // the chain moves to key 1; no live chain holds key 0
            let ring = try #require((other as? any LineageBackend)?.keyRing)
            #expect(try ring.authenticate(first.token) != nil)
            db.clock.advance(by: .seconds(6))
            let retired = KeyRingCache.monotonicNow()
            #expect(try keys.retireKey(0, force: false, context: .admin) == [])
            #expect(eventually(within: 10) { (try? ring.authenticate(first.token)) == nil })
            // The watcher reads every second; 3 s leaves a loaded CI machine a second for the read.
            #expect(KeyRingCache.monotonicNow() - retired < 3_000_000_000, "the other instance accepted key 0 for 3 s after its retirement")
        }
    }

    @Test(arguments: Backend.allCases)
    func aKeyNoLiveChainHoldsIsRetiredWithoutForceAndLogsNobodyOut(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let first = try db.login()
            let keys = Self.keys(db.store.base)
            _ = try keys.rotateKey(context: .admin)
            #expect(Self.awaitMinting(1, db.store.base))
            let moved = try db.store.exchange(first.token)  // the chain moves to key 1
            db.clock.advance(by: .seconds(6))
            #expect(try keys.retireKey(0, force: false, context: .admin) == [])
            _ = try db.store.verify(moved.token)
            _ = try keys.rotateKey(context: .admin)
            #expect(Self.awaitMinting(2, db.store.base))
            let again = try db.store.exchange(moved.token)
            #expect(TokenCodec.claimedKeyID(again.token) == 2)
            // Reopened (a restart), the ring is read from the database: key 2 still verifies.
            try db.reopen()
            _ = try db.store.verify(again.token)
            #expect(try db.rows("SELECT revoked_at FROM chains") == [[nil]])
        }
    }
}

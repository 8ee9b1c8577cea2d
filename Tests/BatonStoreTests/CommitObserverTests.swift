@testable import BatonCore
import BatonStorage
import Foundation
import Synchronization
import Testing

/// The commit observer (the security log's feed) costs the same on the millionth batch as on
/// the first.
///
/// Each store kept the observer as an optional closure inside a generic lock and read it with
/// `withLock { $0 }`. Swift passes a closure through generic storage in its most general form,
/// and an `inout` access converts it on the way in and again on the way back: every read
/// wrapped the stored closure in two more conversion thunks. After n batches a call ran
/// through 2n nested thunks, 64 bytes of stack each batch: 20 % of a server's CPU after 5,557
/// batches, and a SIGSEGV on the writer thread's 8 MiB stack after 130,943 exchanges. Against
/// that build this test failed on both stores: the stack grew by 19,136 bytes over the 300
/// batches.
struct CommitObserverTests {
    @Test(arguments: Backend.allCases)
    func observerRunsAtTheSameStackDepthOnEveryBatch(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let addresses = Mutex<[Int]>([])
        db.store.base.observeCommits { events in
            guard !events.isEmpty else { return }
            let address = Self.stackAddress()
            addresses.withLock { $0.append(address) }
        }
        var token = try db.login().token
        for _ in 0..<300 { token = try db.store.exchange(token).token }
        let seen = addresses.withLock { $0 }
        #expect(seen.count >= 300)
        // The login's batch may be observed from another place; the 300 exchanges' may not.
        let exchanges = seen.suffix(300)
        #expect(Set(exchanges).count == 1, "the stack grew by \(exchanges.first! - exchanges.last!) bytes over 300 batches")
    }

    /// Where the caller's frame is on its thread's stack: the same place at the same depth.
    /// (Foundation's `callStackReturnAddresses` stops at 128 frames.)
    static func stackAddress() -> Int {
        var marker = 0
        return withUnsafeMutablePointer(to: &marker) { Int(bitPattern: $0) }
    }
}

@testable import BatonCore
@testable import BatonPostgres
import BatonOperations
import BatonStorage
import BatonTestSupport
import Foundation
import Synchronization
import Testing

/// The delivery lease on PostgreSQL, where several instances share the outbox. A claim skips an
/// endpoint row another instance holds (it is that instance's turn), but writing an attempt's
/// outcome or rewinding the cursor must wait for the row: skipping them dropped the outcome, and
/// the event went out a second time when the lease ran out (seen in CI: two instances, one
/// event delivered twice, 25 s late).
@Suite struct WebhookLeaseTests {
    static let endpoint = WebhookEndpoint(url: "http://127.0.0.1:9/hook", secret: Array(repeating: 7, count: 24), types: [.userDisabled])

    /// A PostgreSQL database with one `user.disabled` event in its outbox, and the endpoint's
    /// first claim of it.
    static func claimedEvent() async throws -> (BackendDatabase, any WebhookOutbox, DeliveryClaim) {
        let db = try await BackendDatabase(.postgresql, clock: SystemClock())
        let outbox = db.store.base as! any WebhookOutbox
        // The first claim creates the endpoint's row at the end of the (empty) outbox.
        #expect(try outbox.claimDelivery(for: endpoint, lease: .seconds(60)) == .wait(until: nil))
        _ = try db.rows("INSERT INTO webhook_outbox (message_id, type, at, body) VALUES ('msg_lease', 'user.disabled', 1, '{}')")
        guard case .send(let claim) = try outbox.claimDelivery(for: endpoint, lease: .seconds(60)) else {
            throw BatonError.unavailable("the event was not claimed")
        }
        return (db, outbox, claim)
    }

    /// Holds the endpoint's row lock on a connection of its own (another instance's claim in
    /// progress) while `body` runs on a thread of its own; releases it once `body` waits for the
    /// lock (or after 20 s of not waiting: the bug), and returns what the row says afterwards.
    /// All on threads, none on the cooperative pool, so that the release follows the wait at
    /// once however busy the machine is (the store's statement timeout is 5 s).
    static func whileAnotherInstanceHoldsTheRow(_ db: BackendDatabase, _ body: @escaping @Sendable () throws -> Void) async throws -> (waited: Bool, cursor: String?) {
        try await offPool { () throws -> (waited: Bool, cursor: String?) in
            let holder = try PostgresConnection(uri: db.location, statementTimeout: .seconds(30))
            let probe = try PostgresConnection(uri: db.location, statementTimeout: .seconds(30))
            defer { holder.close(); probe.close() }
            try holder.execute("BEGIN")
            _ = try holder.query("SELECT url FROM webhook_endpoints FOR UPDATE")
            let outcome = Mutex<Result<Void, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread {
                let result = Result { try body() }
                outcome.withLock { $0 = result }
                done.signal()
            }.start()
            // Each probe query is a transaction of its own, so it sees pg_stat_activity afresh.
            let waited = try eventually(within: 20) {
                try !probe.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").isEmpty
            }
            try holder.execute("COMMIT")
            done.wait()
            try outcome.withLock { $0 }!.get()
            return (waited, try probe.query("SELECT cursor FROM webhook_endpoints").first?.first ?? nil)
        }
    }

    /// A delivered attempt's outcome is written even while another instance holds the row for
    /// its claim: the cursor moves past the event, which is not sent again.
    @Test func anAttemptsOutcomeWaitsForTheRowInsteadOfBeingDropped() async throws {
        let (db, outbox, claim) = try await Self.claimedEvent()
        let (waited, cursor) = try await Self.whileAnotherInstanceHoldsTheRow(db) {
            try outbox.finishDelivery(claim, outcome: .delivered, retry: RetryPolicy())
        }
        #expect(waited, "finishDelivery did not wait for the row lock")
        #expect(cursor == String(claim.entry.id))
        #expect(try outbox.claimDelivery(for: Self.endpoint, lease: .seconds(60)) == .wait(until: nil))
    }

    /// A replay asked for while an instance holds the row rewinds the endpoint all the same.
    @Test func aReplayWaitsForTheRowInsteadOfSkippingTheEndpoint() async throws {
        let (db, outbox, claim) = try await Self.claimedEvent()
        try outbox.finishDelivery(claim, outcome: .delivered, retry: RetryPolicy())
        let rewound = Atomic(0)
        let (waited, cursor) = try await Self.whileAnotherInstanceHoldsTheRow(db) {
            rewound.store(try outbox.replayWebhooks(since: Instant(milliseconds: 0), url: nil), ordering: .relaxed)
        }
        #expect(waited, "replayWebhooks did not wait for the row lock")
        #expect(rewound.load(ordering: .relaxed) == 1)
        #expect(cursor == "0")
    }
}

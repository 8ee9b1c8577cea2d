@testable import BatonCore
@testable import BatonPostgres
import BatonOperations
import BatonStorage
import BatonTestSupport
import Foundation
import Synchronization
import Testing

/// The delivery lease on PostgreSQL, where several instances share the outbox. A claim skips a
/// pending delivery another instance holds (it is taking that one), but writing an attempt's
/// outcome must wait for the row: skipping it dropped the outcome, and the event went out a
/// second time when the lease ran out (seen in CI: two instances, one event delivered twice,
/// 25 s late). Since version 7 the lock is the pending event's row, not the endpoint's.
@Suite struct WebhookLeaseTests {
    static let endpoint = WebhookEndpoint(url: "http://127.0.0.1:9/hook", secret: Array(repeating: 7, count: 24), types: [.userDisabled])

    /// A PostgreSQL database with one `user.disabled` event in its outbox, and the endpoint's
    /// first claim of it.
    static func claimedEvent() async throws -> (BackendDatabase, any WebhookOutbox, DeliveryClaim) {
        let db = try await BackendDatabase(.postgresql, clock: SystemClock())
        let outbox = db.store.base as! any WebhookOutbox
        // The first claim creates the endpoint's row; events written from then on are queued for it.
        #expect(try outbox.claimDelivery(for: endpoint, alert: true, lease: .seconds(60)) == .wait(until: nil))
        _ = try db.rows("""
            WITH event AS (INSERT INTO webhook_outbox (message_id, type, at, body) VALUES ('msg_lease', 'user.disabled', 1, '{}') RETURNING id)
            INSERT INTO webhook_deliveries (endpoint, event_id, alert, due_at) SELECT '\(endpoint.url)', id, true, 0 FROM event
            """)
        guard case .send(let claim) = try outbox.claimDelivery(for: endpoint, alert: true, lease: .seconds(60)) else {
            throw BatonError.unavailable("the event was not claimed")
        }
        return (db, outbox, claim)
    }

    /// Holds the pending delivery's row lock on a connection of its own (another instance's claim
    /// in progress) while `body` runs on a thread of its own; releases it once `body` waits for
    /// the lock (or after 20 s of not waiting: the bug), and returns how many deliveries are
    /// pending afterwards.
    /// All on threads, none on the cooperative pool, so that the release follows the wait at
    /// once however busy the machine is (the store's statement timeout is 5 s).
    static func whileAnotherInstanceHoldsTheRow(_ db: BackendDatabase, _ body: @escaping @Sendable () throws -> Void) async throws -> (waited: Bool, pending: String?) {
        try await offPool { () throws -> (waited: Bool, pending: String?) in
            let holder = try PostgresConnection(uri: db.location, statementTimeout: .seconds(30))
            let probe = try PostgresConnection(uri: db.location, statementTimeout: .seconds(30))
            defer { holder.close(); probe.close() }
            try holder.execute("BEGIN")
            _ = try holder.query("SELECT event_id FROM webhook_deliveries FOR UPDATE")
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
            return (waited, try probe.query("SELECT count(*) FROM webhook_deliveries").first?.first ?? nil)
        }
    }

    /// A delivered attempt's outcome is written even while another instance holds the row for
    /// its claim: the event is done, and not sent again.
    @Test func anAttemptsOutcomeWaitsForTheRowInsteadOfBeingDropped() async throws {
        let (db, outbox, claim) = try await Self.claimedEvent()
        let (waited, pending) = try await Self.whileAnotherInstanceHoldsTheRow(db) {
            try outbox.finishDelivery(claim, outcome: .delivered, retry: RetryPolicy())
        }
        #expect(waited, "finishDelivery did not wait for the row lock")
        #expect(pending == "0")
        #expect(try outbox.claimDelivery(for: Self.endpoint, alert: true, lease: .seconds(60)) == .wait(until: nil))
    }

    /// A replay while the event is in flight leaves it to that attempt (not sent twice at once);
    /// a replay after it was delivered queues it again, with its webhook-id.
    @Test func aReplayQueuesDeliveredEventsAgainAndLeavesOneInFlightAlone() async throws {
        let (db, outbox, claim) = try await Self.claimedEvent()
        defer { withExtendedLifetime(db) {} }
        #expect(try outbox.replayWebhooks(since: Instant(milliseconds: 0), url: nil) == 1)
        guard case .wait(let until?) = try outbox.claimDelivery(for: Self.endpoint, alert: true, lease: .seconds(60)) else {
            throw BatonError.unavailable("the event in flight was claimed a second time")
        }
        #expect(until > SystemClock().now() + .seconds(30))
        try outbox.finishDelivery(claim, outcome: .delivered, retry: RetryPolicy())
        #expect(try outbox.replayWebhooks(since: Instant(milliseconds: 0), url: nil) == 1)
        guard case .send(let again) = try outbox.claimDelivery(for: Self.endpoint, alert: true, lease: .seconds(60)) else {
            throw BatonError.unavailable("the replayed event was not claimed")
        }
        #expect(again.entry.event.messageID == "msg_lease")
    }
}

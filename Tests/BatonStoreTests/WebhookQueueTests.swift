@testable import BatonCore
import BatonOperations
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// The delivery queue's decisions on both stores, with the clock in the test's hand (issue 28,
/// finding 2): a refused event waits for its own retry while the next one goes, an alert is
/// claimed in its own lane while bulk events are queued or in flight, an event is given up after
/// its own retry period, and one no endpoint still needs is prunable.
@Suite struct WebhookQueueTests {
    static let endpoint = WebhookEndpoint(url: "http://127.0.0.1:9/hook", secret: Array(repeating: 7, count: 24), types: [])

    /// The event `step` sends, or nil when it says to wait.
    static func sent(_ step: DeliveryStep) -> DeliveryClaim? {
        if case .send(let claim) = step { return claim }
        return nil
    }

    @Test(arguments: Backend.allCases)
    func aRefusedEventWaitsAloneAndAlertsHaveTheirOwnLane(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend, hashing: .cheap)
        let outbox = db.store.base as! any WebhookOutbox
        var retry = RetryPolicy()
        retry.period = .seconds(60)
        try outbox.registerWebhookEndpoint(Self.endpoint)
        let first = try db.login(device: "phone")       // login.new_device: bulk
        try db.login(device: "laptop")                  // login.new_device: bulk
        try db.store.logout(first.token)                 // chain.revoked: an alert
        let lease = Duration.seconds(25)

        // The alert is claimed in its lane whatever the bulk lane holds.
        let alert = try #require(Self.sent(try outbox.claimDelivery(for: Self.endpoint, alert: true, lease: lease)))
        #expect(alert.entry.event.type == .chainRevoked)
        // The bulk lane's first event is refused: the second goes next, not after the backoff.
        let refused = try #require(Self.sent(try outbox.claimDelivery(for: Self.endpoint, alert: false, lease: lease)))
        #expect(refused.entry.event.body.contains("\"phone\""))
        try outbox.finishDelivery(refused, outcome: .refused(status: 403), retry: retry)
        let next = try #require(Self.sent(try outbox.claimDelivery(for: Self.endpoint, alert: false, lease: lease)))
        #expect(next.entry.event.body.contains("\"laptop\""))
        try outbox.finishDelivery(next, outcome: .delivered, retry: retry)
        try outbox.finishDelivery(alert, outcome: .delivered, retry: retry)
        // The refused one waits for its own retry (5 s), then is sent again with its webhook-id.
        #expect(try outbox.claimDelivery(for: Self.endpoint, alert: false, lease: lease) == .wait(until: db.clock.now() + .seconds(5)))
        db.clock.advance(by: .seconds(5))
        let again = try #require(Self.sent(try outbox.claimDelivery(for: Self.endpoint, alert: false, lease: lease)))
        #expect(again.entry.event.messageID == refused.entry.event.messageID && again.pending.attempts == 1)
        let status = try #require(try outbox.webhookStatuses().first)
        #expect(status.pending == 1 && status.retrying == 1 && status.state.delivered == 2 && status.state.lastError == "HTTP 403")

        // Past its own retry period it is given up: nothing pending, every event prunable.
        db.clock.advance(by: .seconds(60))
        try outbox.finishDelivery(again, outcome: .refused(status: 403), retry: retry)
        let done = try #require(try outbox.webhookStatuses().first)
        #expect(done.pending == 0 && done.state.failed == 1 && done.state.delivered == 2)
        #expect(try outbox.claimDelivery(for: Self.endpoint, alert: false, lease: lease) == .wait(until: nil))
        db.clock.advance(by: .seconds(1))
        #expect(try outbox.pruneWebhookOutbox(before: db.clock.now(), dryRun: false, batchSize: 500) == 3)
    }
}

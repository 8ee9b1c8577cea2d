import BatonCore
import BatonStorage

/// An attempt a delivery worker may make now: the event, and the lease that makes it this
/// instance's alone until `leaseUntil`.
package struct DeliveryClaim: Sendable, Equatable {
    package var endpoint: String
    package var entry: OutboxEntry
    package var leaseID: String

    package init(endpoint: String, entry: OutboxEntry, leaseID: String) {
        self.endpoint = endpoint
        self.entry = entry
        self.leaseID = leaseID
    }
}

/// What a worker should do after asking for work.
package enum DeliveryStep: Sendable, Equatable {
    /// Send this event now.
    case send(DeliveryClaim)
    /// Nothing to send before this instant (backoff, or another instance's lease); nil when
    /// the outbox holds nothing for the endpoint (wait to be woken, or poll).
    case wait(until: Instant?)
}

/// The outbox side of a store, for the delivery worker and `baton admin webhooks`.
package protocol WebhookOutbox: AnyObject, Sendable {
    /// Takes the endpoint's next event under a lease of `lease`, or says how long to wait.
    func claimDelivery(for endpoint: WebhookEndpoint, lease: Duration) throws(BatonError) -> DeliveryStep
    /// Writes an attempt's outcome back (if the lease is still this claim's).
    func finishDelivery(_ claim: DeliveryClaim, outcome: DeliveryOutcome, retry: RetryPolicy) throws(BatonError)
    /// Every endpoint's delivery state and pending count.
    func webhookStatuses() throws(BatonError) -> [WebhookEndpointStatus]
    /// Sends again every event since `instant` (to `url`, or every endpoint): moves the
    /// cursors back. Returns how many endpoints were rewound.
    func replayWebhooks(since instant: Instant, url: String?) throws(BatonError) -> Int
    /// Deletes the events from before `cutoff` that every endpoint is done with, `batchSize`
    /// per transaction; a `dryRun` counts them and deletes nothing. Returns how many.
    func pruneWebhookOutbox(before cutoff: Instant, dryRun: Bool, batchSize: Int) throws(BatonError) -> Int
    /// Deletes the delivery state of an endpoint no instance sends to any more, so its pending
    /// events no longer hold back pruning. False when the URL has no state.
    func forgetWebhookEndpoint(_ url: String) throws(BatonError) -> Bool
}

extension LineageBackend {
    /// The delivery decision, once for both stores: the endpoint's row (created at the end of
    /// the outbox the first time, so a new endpoint is sent what happens from then on) is read
    /// under its lock, skipped while another instance's lease or the backoff runs; otherwise
    /// the next event of the endpoint's types is leased to this caller.
    package func claimDelivery(for endpoint: WebhookEndpoint, lease: Duration) throws(BatonError) -> DeliveryStep {
        // An idle endpoint's poll is a read, not a write (SQLite's writer is not woken for it).
        let idle = try read { transaction throws(Transaction.Failure) -> Bool in
            guard let state = try transaction.endpointState(endpoint.url, lock: .none), state.eventTypes == endpoint.typeNames else { return false }
            return try transaction.nextOutboxEntry(after: state.cursor, types: endpoint.typeNames) == nil
        }
        if idle { return .wait(until: nil) }
        return try write { [clock] transaction throws(Transaction.Failure) -> DeliveryStep in
            let now = clock.now()
            if try transaction.endpointState(endpoint.url, lock: .none) == nil {
                var fresh = EndpointState(url: endpoint.url, cursor: try transaction.lastOutboxID(before: nil))
                fresh.eventTypes = endpoint.typeNames
                try transaction.insertEndpoint(fresh)
            }
            // Another instance holds the row for its own claim: it will take the event.
            guard var state = try transaction.endpointState(endpoint.url, lock: .skipIfHeld) else { return .wait(until: now + lease) }
            guard state.isReady(at: now) else { return .wait(until: max(state.leaseUntil ?? now, state.nextAttemptAt ?? now)) }
            guard let entry = try transaction.nextOutboxEntry(after: state.cursor, types: endpoint.typeNames) else {
                if state.eventTypes != endpoint.typeNames {
                    state.eventTypes = endpoint.typeNames
                    try transaction.saveEndpoint(state)
                }
                return .wait(until: nil)
            }
            state.eventTypes = endpoint.typeNames
            state.leaseID = Base64URL.encode(SecureRandom.bytes(12))
            state.leaseUntil = now + lease
            try transaction.saveEndpoint(state)
            return .send(DeliveryClaim(endpoint: endpoint.url, entry: entry, leaseID: state.leaseID!))
        }
    }

    /// Writes the attempt's outcome (`RetryPolicy.state(after:)`), unless the lease expired and
    /// another instance took the event meanwhile (then its outcome is the one that counts).
    /// Waits for the row when another instance holds it for a claim (which then finds the
    /// lease still running): skipping would drop the outcome and send the event again.
    package func finishDelivery(_ claim: DeliveryClaim, outcome: DeliveryOutcome, retry: RetryPolicy) throws(BatonError) {
        try write { [clock] transaction throws(Transaction.Failure) in
            guard let state = try transaction.endpointState(claim.endpoint, lock: .wait), state.leaseID == claim.leaseID else { return }
            try transaction.saveEndpoint(retry.state(after: outcome, of: claim.entry, from: state, now: clock.now()))
        }
    }

    /// Every endpoint's delivery state and pending count.
    package func webhookStatuses() throws(BatonError) -> [WebhookEndpointStatus] {
        try read { transaction throws(Transaction.Failure) in try transaction.endpointStatuses() }
    }

    /// Moves the cursor of `url` (or of every endpoint) back to just before the first event at
    /// or after `instant`, and clears its backoff: those events are sent again, in order.
    package func replayWebhooks(since instant: Instant, url: String?) throws(BatonError) -> Int {
        try write { transaction throws(Transaction.Failure) -> Int in
            let cursor = try transaction.lastOutboxID(before: instant)
            var rewound = 0
            for status in try transaction.endpointStatuses() where url == nil || status.state.url == url {
                guard var state = try transaction.endpointState(status.state.url, lock: .wait) else { continue }
                state.cursor = min(state.cursor, cursor)
                state.attempts = 0
                state.nextAttemptAt = nil
                state.firstFailedAt = nil
                try transaction.saveEndpoint(state)
                rewound += 1
            }
            return rewound
        }
    }

    /// Outbox housekeeping: the events from before `cutoff` that no endpoint still has to send
    /// (delivered, given up, or of types it does not take) go, oldest first, `batchSize` per
    /// write transaction so requests interleave. Events an endpoint has not reached stay
    /// whatever their age: pruning never loses an undelivered event.
    package func pruneWebhookOutbox(before cutoff: Instant, dryRun: Bool, batchSize: Int = 500) throws(BatonError) -> Int {
        if dryRun { return try read { transaction throws(Transaction.Failure) in try transaction.pruneOutbox(before: cutoff, limit: nil) } }
        var total = 0
        while true {
            let removed = try write { transaction throws(Transaction.Failure) in try transaction.pruneOutbox(before: cutoff, limit: batchSize) }
            total += removed
            if removed < batchSize { return total }
        }
    }

    /// Deletes the delivery state of `url` (an endpoint taken out of every instance's
    /// configuration). Configured again later, it starts at the end of the outbox.
    package func forgetWebhookEndpoint(_ url: String) throws(BatonError) -> Bool {
        try write { transaction throws(Transaction.Failure) in try transaction.deleteEndpoint(url) }
    }
}

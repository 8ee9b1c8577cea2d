import BatonCore
import BatonStorage

/// An attempt a delivery worker may make now: the event with its retry state, leased to this
/// caller alone (`pending.leaseID`) until the lease's end.
package struct DeliveryClaim: Sendable, Equatable {
    package var pending: PendingDelivery

    package init(pending: PendingDelivery) {
        self.pending = pending
    }

    package var endpoint: String { pending.endpoint }
    package var entry: OutboxEntry { pending.entry }
}

/// What a worker should do after asking for work.
package enum DeliveryStep: Sendable, Equatable {
    /// Send this event now.
    case send(DeliveryClaim)
    /// Nothing to send before this instant (the next retry, or another attempt's lease); nil
    /// when nothing is pending in the lane (poll).
    case wait(until: Instant?)
}

/// The outbox side of a store, for the delivery worker and `baton admin webhooks`.
package protocol WebhookOutbox: AnyObject, Sendable {
    /// Takes the endpoint's next due event of the lane (`alert`: security alerts, else bulk
    /// events) under a lease of `lease`, or says how long to wait.
    func claimDelivery(for endpoint: WebhookEndpoint, alert: Bool, lease: Duration) throws(BatonError) -> DeliveryStep
    /// Creates the endpoint's row (or updates its types), so every later event is queued for it.
    func registerWebhookEndpoint(_ endpoint: WebhookEndpoint) throws(BatonError)
    /// Writes an attempt's outcome back (if the lease is still this claim's).
    func finishDelivery(_ claim: DeliveryClaim, outcome: DeliveryOutcome, retry: RetryPolicy) throws(BatonError)
    /// Every endpoint's delivery state and pending count.
    func webhookStatuses() throws(BatonError) -> [WebhookEndpointStatus]
    /// Sends again every event since `instant` (to `url`, or every endpoint): queues them
    /// again. Returns how many endpoints were matched.
    func replayWebhooks(since instant: Instant, url: String?) throws(BatonError) -> Int
    /// Deletes the events from before `cutoff` that every endpoint is done with, `batchSize`
    /// per transaction; a `dryRun` counts them and deletes nothing. Returns how many.
    func pruneWebhookOutbox(before cutoff: Instant, dryRun: Bool, batchSize: Int) throws(BatonError) -> Int
    /// Deletes the state and pending deliveries of an endpoint no instance sends to any more, so
    /// its pending events no longer hold back pruning. False when the URL has no state.
    func forgetWebhookEndpoint(_ url: String) throws(BatonError) -> Bool
}

extension LineageBackend {
    /// The delivery decision, once for both stores. The endpoint's row is created the first
    /// time (from then on every new event of its types is queued for it); an idle lane's poll
    /// is one index lookup in a read transaction (SQLite's writer is not woken for it); a due
    /// event is leased to this caller. Events are claimed each on its own: one in backoff or
    /// in flight elsewhere holds back no other (issue 28, finding 2a).
    package func claimDelivery(for endpoint: WebhookEndpoint, alert: Bool, lease: Duration) throws(BatonError) -> DeliveryStep {
        let types = endpoint.typeNames
        let idle = try read { [clock] transaction throws(Transaction.Failure) -> DeliveryStep? in
            guard let state = try transaction.endpointState(endpoint.url), state.eventTypes == types else { return nil }
            guard let due = try transaction.nextDue(endpoint.url, alert: alert) else { return .wait(until: nil) }
            return due > clock.now() ? .wait(until: due) : nil
        }
        if let idle { return idle }
        return try write { [clock] transaction throws(Transaction.Failure) -> DeliveryStep in
            let now = clock.now()
            try Self.register(endpoint, in: transaction)
            let leaseID = Base64URL.encode(SecureRandom.bytes(12))
            guard let pending = try transaction.claimDue(endpoint.url, alert: alert, now: now, leaseID: leaseID, leaseUntil: now + lease) else {
                return .wait(until: try transaction.nextDue(endpoint.url, alert: alert).map { max($0, now + .milliseconds(1)) })
            }
            // Queued before the endpoint's types changed to leave this one out: done for it.
            guard types.contains(pending.entry.event.type.rawValue) else {
                try transaction.deleteDelivery(endpoint.url, eventID: pending.entry.id)
                return .wait(until: now)
            }
            return .send(DeliveryClaim(pending: pending))
        }
    }

    /// Creates the endpoint's row (or updates its types): from this commit on, every new event
    /// of its types is queued for it. `baton serve` calls it before it serves a request.
    package func registerWebhookEndpoint(_ endpoint: WebhookEndpoint) throws(BatonError) {
        try write { transaction throws(Transaction.Failure) in try Self.register(endpoint, in: transaction) }
    }

    private static func register(_ endpoint: WebhookEndpoint, in transaction: Transaction) throws(Transaction.Failure) {
        if let state = try transaction.endpointState(endpoint.url) {
            if state.eventTypes != endpoint.typeNames { try transaction.saveEndpointTypes(endpoint.url, endpoint.typeNames) }
        } else {
            var fresh = EndpointState(url: endpoint.url)
            fresh.eventTypes = endpoint.typeNames
            try transaction.insertEndpoint(fresh)
        }
    }

    /// Writes the attempt's outcome (`RetryPolicy.pending(after:)`): a delivered or given-up
    /// event is done (its row deleted), a failed one waits for its next attempt. Nothing is
    /// written when the lease expired and another attempt took the event meanwhile (its outcome
    /// is the one that counts). Waits for the row when another instance holds it.
    package func finishDelivery(_ claim: DeliveryClaim, outcome: DeliveryOutcome, retry: RetryPolicy) throws(BatonError) {
        try write { [clock] transaction throws(Transaction.Failure) in
            let now = clock.now()
            guard let pending = try transaction.pendingDelivery(claim.endpoint, eventID: claim.entry.id),
                  pending.leaseID == claim.pending.leaseID else { return }
            if let next = retry.pending(after: outcome, of: pending, now: now) {
                try transaction.saveDelivery(next)
                try transaction.recordAttempt(claim.endpoint, delivered: 0, failed: 0, error: outcome.reason, at: now)
            } else {
                try transaction.deleteDelivery(claim.endpoint, eventID: claim.entry.id)
                let delivered: Int64 = outcome == .delivered ? 1 : 0
                try transaction.recordAttempt(claim.endpoint, delivered: delivered, failed: 1 - delivered, error: outcome.reason, at: now)
            }
        }
    }

    /// Every endpoint's delivery state and pending count.
    package func webhookStatuses() throws(BatonError) -> [WebhookEndpointStatus] {
        try read { transaction throws(Transaction.Failure) in try transaction.endpointStatuses() }
    }

    /// Queues again every event at or after `instant` for `url` (or every endpoint), of the
    /// types each takes: they are sent again, fresh, with their webhook-ids. An event pending
    /// already (in flight, or waiting for a retry) keeps its state.
    package func replayWebhooks(since instant: Instant, url: String?) throws(BatonError) -> Int {
        try write { transaction throws(Transaction.Failure) -> Int in try transaction.queueAgain(since: instant, url: url) }
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

    /// Deletes the state and pending deliveries of `url` (an endpoint taken out of every
    /// instance's configuration). Configured again later, it starts with the events after that.
    package func forgetWebhookEndpoint(_ url: String) throws(BatonError) -> Bool {
        try write { transaction throws(Transaction.Failure) in try transaction.deleteEndpoint(url) }
    }
}

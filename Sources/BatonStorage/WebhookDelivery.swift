import BatonCore

/// One webhook endpoint as `baton serve` is configured with it. Its URL is its name in the
/// database (`webhook_endpoints.url`): the delivery state follows the URL across restarts.
package struct WebhookEndpoint: Sendable, Equatable {
    package var url: String
    /// The signing secrets' bytes (the file holds `whsec_` and their base64), in the file's
    /// order: each event is signed with every one of them, so a receiver moving from one secret
    /// to the next verifies with either during the overlap (docs/webhooks.md, "Rotating the
    /// signing secret"). Never empty.
    package var secrets: [[UInt8]]
    /// The event types sent there; every type when empty.
    package var types: Set<WebhookEventType>

    package init(url: String, secrets: [[UInt8]], types: Set<WebhookEventType>) {
        precondition(!secrets.isEmpty, "a webhook endpoint needs a secret")
        self.url = url
        self.secrets = secrets
        self.types = types
    }

    /// An endpoint with one signing secret.
    package init(url: String, secret: [UInt8], types: Set<WebhookEventType>) {
        self.init(url: url, secrets: [secret], types: types)
    }

    /// The type names as stored in the outbox, sorted (every type when `types` is empty).
    package var typeNames: [String] {
        (types.isEmpty ? WebhookEventType.allCases : Array(types)).map(\.rawValue).sorted()
    }
}

/// An event read back from the outbox, with its position (`id`: commit order on SQLite, the
/// order fresh events are sent in).
package struct OutboxEntry: Sendable, Equatable {
    package var id: Int64
    package var event: OutboxEvent

    package init(id: Int64, event: OutboxEvent) {
        self.id = id
        self.event = event
    }
}

/// One endpoint's standing as the database holds it: the types it takes (which the outbox's
/// writers read to queue an event for it) and its counters. Each pending event's own retry
/// state is a `PendingDelivery`.
package struct EndpointState: Sendable, Equatable {
    package var url: String
    /// The event types the endpoint takes, as the last instance to deliver there configured it.
    package var eventTypes: [String] = []
    package var lastError: String?
    package var lastErrorAt: Instant?
    package var delivered: Int64 = 0
    package var failed: Int64 = 0

    package init(url: String) {
        self.url = url
    }
}

/// One event still to be sent to one endpoint (a `webhook_deliveries` row), with its own retry
/// state: events are retried each on its own schedule, so one a receiver keeps refusing holds
/// back no other (issue 28, finding 2a).
package struct PendingDelivery: Sendable, Equatable {
    package var endpoint: String
    package var entry: OutboxEntry
    /// When the next attempt may start; the epoch (0) for an event never tried, so fresh events go
    /// first, in id order.
    package var dueAt: Instant
    /// Failed attempts so far.
    package var attempts: Int = 0
    /// The first failed attempt: the retry period counts from it.
    package var firstFailedAt: Instant?
    /// The lease of the attempt in flight (which instance's outcome counts), nil between attempts.
    package var leaseID: String?

    package init(endpoint: String, entry: OutboxEntry, dueAt: Instant) {
        self.endpoint = endpoint
        self.entry = entry
        self.dueAt = dueAt
    }
}

/// What one delivery attempt came to.
package enum DeliveryOutcome: Sendable, Equatable {
    /// A 2xx answer.
    case delivered
    /// The receiver answered, but not 2xx: it refused this event (the event's own business,
    /// never a reason to slow the others).
    case refused(status: Int)
    /// No answer: a timeout, a refused connection, a TLS failure (the text says which). The
    /// receiver may be down, so the lane pauses a little before its next attempt.
    case failed(String)

    /// The text `baton admin webhooks` shows as the last error.
    package var reason: String? {
        switch self {
        case .delivered: nil
        case .refused(let status): "HTTP \(status)"
        case .failed(let text): text
        }
    }
}

/// How long and how often an event is retried: exponential backoff from `initialDelay`,
/// doubling up to `maximumDelay`, for `period` after the event's first failure; then the
/// event is given up (counted `failed`).
package struct RetryPolicy: Sendable, Equatable {
    package var period: Duration = .seconds(24 * 3600)
    package var initialDelay: Duration = .seconds(5)
    package var maximumDelay: Duration = .seconds(3600)

    package init() {}

    /// The wait after the `attempts`-th consecutive failure (1, 2, ...).
    package func delay(afterAttempts attempts: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(attempts, 1) {
            delay = delay * 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }

    /// The event's state after an attempt ended with `outcome`: nil when it is done (delivered,
    /// or given up after the retry period), else its next attempt's time. The pure decision
    /// both stores write back; the lease is released either way.
    package func pending(after outcome: DeliveryOutcome, of pending: PendingDelivery, now: Instant) -> PendingDelivery? {
        if outcome == .delivered { return nil }
        let firstFailure = pending.firstFailedAt ?? now
        if now - firstFailure >= period { return nil }
        var next = pending
        next.leaseID = nil
        next.attempts = pending.attempts + 1
        next.firstFailedAt = firstFailure
        next.dueAt = now + delay(afterAttempts: next.attempts)
        return next
    }
}

/// An endpoint's standing for `baton admin webhooks` and /metrics.
package struct WebhookEndpointStatus: Sendable, Equatable {
    package var state: EndpointState
    /// Events queued for it and not yet done.
    package var pending: Int64
    /// Of those, the events that failed at least once and wait for another attempt.
    package var retrying: Int64 = 0
    /// The earliest of their next attempts.
    package var nextRetryAt: Instant?
    /// When the oldest of the pending events was written: the backlog's age (nil without a backlog).
    package var oldestPendingAt: Instant?

    package init(state: EndpointState, pending: Int64, oldestPendingAt: Instant? = nil) {
        self.state = state
        self.pending = pending
        self.oldestPendingAt = oldestPendingAt
    }
}

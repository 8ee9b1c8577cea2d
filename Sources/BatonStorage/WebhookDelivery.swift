import BatonCore

/// One webhook endpoint as `baton serve` is configured with it. Its URL is its name in the
/// database (`webhook_endpoints.url`): the delivery state follows the URL across restarts.
package struct WebhookEndpoint: Sendable, Equatable {
    package var url: String
    /// The signing secret's bytes (the file holds `whsec_` and their base64).
    package var secret: [UInt8]
    /// The event types sent there; every type when empty.
    package var types: Set<WebhookEventType>

    package init(url: String, secret: [UInt8], types: Set<WebhookEventType>) {
        self.url = url
        self.secret = secret
        self.types = types
    }

    /// The type names as stored in the outbox, sorted (every type when `types` is empty).
    package var typeNames: [String] {
        (types.isEmpty ? WebhookEventType.allCases : Array(types)).map(\.rawValue).sorted()
    }
}

/// An event read back from the outbox, with its position (`id`, the order of delivery).
package struct OutboxEntry: Sendable, Equatable {
    package var id: Int64
    package var event: OutboxEvent

    package init(id: Int64, event: OutboxEvent) {
        self.id = id
        self.event = event
    }
}

/// One endpoint's delivery state as the database holds it: everything up to `cursor` is done
/// (delivered, or given up on after the retry period); the event after it is the one being
/// tried. A lease (`leaseID`, `leaseUntil`) says which instance has an attempt in flight.
package struct EndpointState: Sendable, Equatable {
    package var url: String
    package var cursor: Int64
    /// The event types the endpoint takes, as the last instance to deliver there configured it.
    package var eventTypes: [String] = []
    /// Failed attempts at the event after `cursor`.
    package var attempts: Int = 0
    package var nextAttemptAt: Instant?
    /// The first failed attempt at the event after `cursor`: the retry period counts from it.
    package var firstFailedAt: Instant?
    package var lastError: String?
    package var lastErrorAt: Instant?
    package var delivered: Int64 = 0
    package var failed: Int64 = 0
    package var leaseID: String?
    package var leaseUntil: Instant?

    package init(url: String, cursor: Int64) {
        self.url = url
        self.cursor = cursor
    }

    /// Whether an attempt may start now: no unexpired lease, no backoff still running.
    package func isReady(at now: Instant) -> Bool {
        if let leaseUntil, leaseUntil > now { return false }
        if let nextAttemptAt, nextAttemptAt > now { return false }
        return true
    }
}

/// What one delivery attempt came to.
package enum DeliveryOutcome: Sendable, Equatable {
    /// A 2xx answer.
    case delivered
    /// Anything else: another status, a timeout, a refused connection (the text says which).
    case failed(String)
}

/// How long and how often an event is retried: exponential backoff from `initialDelay`,
/// doubling up to `maximumDelay`, for `period` after the first failure; then the endpoint
/// gives the event up (counted `failed`) and moves on to the next one.
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

    /// The endpoint's state after an attempt at `entry` ended with `outcome`: the pure decision
    /// both stores write back. The lease is released either way.
    package func state(after outcome: DeliveryOutcome, of entry: OutboxEntry, from state: EndpointState, now: Instant) -> EndpointState {
        var next = state
        next.leaseID = nil
        next.leaseUntil = nil
        switch outcome {
        case .delivered:
            next.cursor = entry.id
            next.delivered += 1
            next.attempts = 0
            next.nextAttemptAt = nil
            next.firstFailedAt = nil
        case .failed(let reason):
            next.lastError = reason
            next.lastErrorAt = now
            let firstFailure = state.firstFailedAt ?? now
            if now - firstFailure >= period {
                // Given up: the next event is not held back any longer.
                next.cursor = entry.id
                next.failed += 1
                next.attempts = 0
                next.nextAttemptAt = nil
                next.firstFailedAt = nil
            } else {
                next.attempts = state.attempts + 1
                next.firstFailedAt = firstFailure
                next.nextAttemptAt = now + delay(afterAttempts: next.attempts)
            }
        }
        return next
    }
}

/// An endpoint's standing for `baton admin webhooks` and /metrics.
package struct WebhookEndpointStatus: Sendable, Equatable {
    package var state: EndpointState
    /// Events after the cursor (of any type: the admin view does not know the endpoint's filter).
    package var pending: Int64
    /// When the oldest of those was written: the backlog's age (nil without a backlog).
    package var oldestPendingAt: Instant?

    package init(state: EndpointState, pending: Int64, oldestPendingAt: Instant? = nil) {
        self.state = state
        self.pending = pending
        self.oldestPendingAt = oldestPendingAt
    }
}

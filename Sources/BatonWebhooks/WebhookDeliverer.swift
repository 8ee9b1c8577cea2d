import BatonCore
import BatonOperations
import BatonStorage
import BatonSync
import Foundation
import Synchronization

/// Sends the outbox to the configured endpoints: two threads per endpoint, one for the security
/// alerts and one for the bulk events (`WebhookEventType.isAlert`), each taking its lane's next
/// due event (`WebhookOutbox.claimDelivery`), sending it, and writing the outcome back. Each
/// event is retried on its own schedule, so an event the receiver refuses holds back no other,
/// and no backlog of bulk events delays an alert (issue 28, finding 2). Nothing on the request
/// path waits for it: logins and exchanges only write the outbox rows in their own
/// transaction; a dead receiver costs these threads their timeout, nothing else (libcurl waits
/// in poll(2): no CPU while an attempt hangs).
package final class WebhookDeliverer: Sendable {
    /// How delivery runs.
    package struct Options: Sendable, Equatable {
        /// The answer deadline of one attempt.
        package var timeout: Duration = .seconds(10)
        /// How often an idle lane looks for due events again (one index lookup).
        package var pollInterval: Duration = .milliseconds(200)
        package var retry = RetryPolicy()
        /// `--webhook-ca-file`: the certificates (PEM) HTTPS receivers are verified against,
        /// instead of the system's (receivers with a private CA).
        package var caFile: String?
        package init() {}
    }

    /// Counters since start, for /metrics.
    package struct Counters: Sendable, Equatable {
        package var delivered: [String: Int64] = [:]
        package var failedAttempts: [String: Int64] = [:]
    }

    private let outbox: any WebhookOutbox
    private let endpoints: [WebhookEndpoint]
    private let options: Options
    /// Raised by `stop`: an attempt in flight ends within about a second.
    private let stopFlag = StopFlag()
    private let clock: any WallClock
    private let lock = ConditionLock()
    private let stopped = Atomic<Bool>(false)
    private let running = Atomic<Int>(0)
    private let counters = Locked(Counters())
    private let log: @Sendable (String) -> Void

    /// Starts two delivery threads per endpoint: its alerts' lane and its bulk events' lane.
    package init(outbox: any WebhookOutbox, endpoints: [WebhookEndpoint], options: Options, clock: any WallClock,
                 log: @escaping @Sendable (String) -> Void) {
        self.outbox = outbox
        self.endpoints = endpoints
        self.options = options
        self.clock = clock
        self.log = log
        for endpoint in endpoints {
            // Before the first request: every event from now on is queued for the endpoint. On
            // failure the delivery threads' first claim registers it.
            do throws(BatonError) { try outbox.registerWebhookEndpoint(endpoint) } catch {
                log(Self.line("webhook_outbox_unavailable", endpoint.url, detail: error.message))
            }
            for alert in [true, false] {
                running.add(1, ordering: .relaxed)
                let thread = Thread { [self] in
                    deliverLoop(endpoint, alert: alert)
                    lock.withLock {
                        running.subtract(1, ordering: .releasing)
                        lock.broadcast()
                    }
                }
                thread.name = alert ? "baton-webhooks-alerts" : "baton-webhooks-bulk"
                thread.start()
            }
        }
    }

    /// The counters so far.
    package var statistics: Counters { counters.withLock { $0 } }

    /// Stops every thread and waits for them: an attempt in flight is cut within about a
    /// second (recorded as failed, so it is sent again after the backoff).
    package func stop() {
        stopFlag.raise()
        lock.withLock {
            stopped.store(true, ordering: .releasing)
            lock.broadcast()
            while running.load(ordering: .acquiring) > 0 { lock.wait(milliseconds: 100) }
        }
    }

    /// The longest pause after attempts that got no answer at all: long enough not to hammer a
    /// receiver that is down, short enough that an alert waits seconds, not the backoff, once it
    /// is back.
    static let maximumUnansweredPause: Duration = .seconds(2)

    private func deliverLoop(_ endpoint: WebhookEndpoint, alert: Bool) {
        // The lease covers the attempt's timeout with a margin, so an instance that died
        // mid-attempt gives the event back to the others soon after.
        let lease = options.timeout * 2 + .seconds(5)
        var lastLoggedError: String?
        // Attempts in a row that got no answer: the receiver may be down. A refusal (an HTTP
        // answer) is the event's own business and never slows the lane.
        var unanswered = 0
        let sender = WebhookSender(timeout: options.timeout, stop: stopFlag, caFile: options.caFile)
        while !stopped.load(ordering: .acquiring) {
            let step: DeliveryStep
            do throws(BatonError) {
                step = try outbox.claimDelivery(for: endpoint, alert: alert, lease: lease)
            } catch {
                if lastLoggedError != error.message { log(Self.line("webhook_outbox_unavailable", endpoint.url, detail: error.message)) }
                lastLoggedError = error.message
                pause(until: nil)
                continue
            }
            guard case .send(let claim) = step else {
                if case .wait(let until) = step { pause(until: until) }
                continue
            }
            let outcome = sender.send(claim.entry.event, to: endpoint, now: clock.now())
            counters.withLock { counters in
                switch outcome {
                case .delivered: counters.delivered[endpoint.url, default: 0] += 1
                case .refused, .failed: counters.failedAttempts[endpoint.url, default: 0] += 1
                }
            }
            if let reason = outcome.reason, lastLoggedError != reason {
                log(Self.line("webhook_delivery_failed", endpoint.url, detail: reason))
                lastLoggedError = reason
            } else if outcome == .delivered {
                lastLoggedError = nil
            }
            do throws(BatonError) {
                try outbox.finishDelivery(claim, outcome: outcome, retry: options.retry)
            } catch {
                // The lease runs out and the event is sent again: at least once.
                log(Self.line("webhook_outbox_unavailable", endpoint.url, detail: error.message))
                pause(until: nil)
            }
            if case .failed = outcome {
                unanswered += 1
                let resume = clock.now() + min(options.retry.delay(afterAttempts: unanswered), Self.maximumUnansweredPause)
                while !stopped.load(ordering: .acquiring) && clock.now() < resume { pause(until: resume) }
            } else {
                unanswered = 0
            }
        }
    }

    /// Waits until `until` (at most one poll interval when nil or further away), or until stopped.
    private func pause(until: Instant?) {
        var wait = options.pollInterval
        if let until {
            let left = until - clock.now()
            wait = max(.milliseconds(1), min(left, .seconds(1)))
        }
        lock.withLock {
            if !stopped.load(ordering: .acquiring) { lock.wait(milliseconds: max(1, Int(wait.wholeMilliseconds))) }
        }
    }

    private static func line(_ event: String, _ url: String, detail: String) -> String {
        JSONValue.object(["event": .string(event), "endpoint": .string(url), "detail": .string(detail)]).text
    }
}

extension WebhookDeliverer {
    /// /metrics text: this process's attempts by outcome (counters), and per endpoint from the
    /// database the events pending and those given up after the retry period (gauges).
    package func metricsText() -> String {
        let counters = statistics
        var out = "# HELP baton_webhook_deliveries_total Webhook delivery attempts by this process, by endpoint and outcome.\n"
        out += "# TYPE baton_webhook_deliveries_total counter\n"
        for endpoint in endpoints {
            let label = Self.labelValue(endpoint.url)
            out += "baton_webhook_deliveries_total{endpoint=\"\(label)\",outcome=\"delivered\"} \(counters.delivered[endpoint.url] ?? 0)\n"
            out += "baton_webhook_deliveries_total{endpoint=\"\(label)\",outcome=\"failed\"} \(counters.failedAttempts[endpoint.url] ?? 0)\n"
        }
        guard let statuses = try? outbox.webhookStatuses() else { return out }
        let configured = Set(endpoints.map(\.url))
        out += "# HELP baton_webhook_pending_events Events not yet delivered to an endpoint (all instances).\n"
        out += "# TYPE baton_webhook_pending_events gauge\n"
        for status in statuses where configured.contains(status.state.url) {
            out += "baton_webhook_pending_events{endpoint=\"\(Self.labelValue(status.state.url))\"} \(status.pending)\n"
        }
        out += "# HELP baton_webhook_oldest_pending_seconds Age of the oldest event not yet delivered to an endpoint, 0 without a backlog (all instances).\n"
        out += "# TYPE baton_webhook_oldest_pending_seconds gauge\n"
        let now = clock.now()
        for status in statuses where configured.contains(status.state.url) {
            let age = status.oldestPendingAt.map { max(0, Double((now - $0).wholeMilliseconds) / 1000) } ?? 0
            out += "baton_webhook_oldest_pending_seconds{endpoint=\"\(Self.labelValue(status.state.url))\"} \(age)\n"
        }
        out += "# HELP baton_webhook_failed_events Events given up on after the retry period, by endpoint (all instances).\n"
        out += "# TYPE baton_webhook_failed_events gauge\n"
        for status in statuses where configured.contains(status.state.url) {
            out += "baton_webhook_failed_events{endpoint=\"\(Self.labelValue(status.state.url))\"} \(status.state.failed)\n"
        }
        return out
    }

    /// A Prometheus label value: backslash, double quote and line feed escaped (exposition format).
    static func labelValue(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

import BatonCore
import BatonOperations
import BatonStorage
import BatonWebhooks

/// `baton admin webhooks`, `baton admin webhooks replay`, `baton admin webhooks forget`, `baton admin webhooks new-secret`.
enum WebhookCommands {
    static let all: [Subcommand] = [
        Subcommand(
            path: "webhooks", overview: "Show each webhook endpoint's delivered, failed and pending events and its last error.",
            discussion: """
                Endpoints are the --webhook URLs of `baton serve`; one appears here once an
                instance has delivered there. delivered and failed (given up after the retry
                period) count since the endpoint first appeared; pending counts the events of
                its types not yet done, retrying those of them that failed at least once
                (each is retried on its own schedule; next retry is the earliest).
                """,
            usage: "[--db <path>]", options: [AdminCommand.database]
        ) { invocation in
            invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
                guard let outbox = store as? any WebhookOutbox else { return invocation.failure("this store has no webhook outbox") }
                let statuses = try outbox.webhookStatuses()
                invocation.output.out(statusTable(statuses, now: SystemClock().now()))
                return .success
            }
        },
        Subcommand(
            path: "webhooks replay", overview: "Send again every event since a time.",
            discussion: """
                Queues every event at or after --since again for each endpoint (or the one
                named by --endpoint), of the types it takes; receivers see those events again
                with the same webhook-id and may deduplicate them. An event still pending keeps
                its place. A running server picks the change up at its next poll.
                """,
            usage: "--since <dur|time> [--endpoint <url>] [--db <path>]",
            options: [.init(name: "since", valueName: "dur|time", help: "A duration back from now (1h, 7d) or an RFC 3339 time.", environment: false),
                      .init(name: "endpoint", valueName: "url", help: "Only this endpoint. (default: all)", environment: false),
                      AdminCommand.database]
        ) { invocation in
            guard let text = invocation.value("since") else { return invocation.usageError("Missing expected option '--since <dur|time>'.") }
            guard let since = parseDuration(text).map({ SystemClock().now() - $0 }) ?? RFC3339.parse(text) else {
                return invocation.usageError("Invalid value '\(text)' for '--since <dur|time>': expected a duration such as 1h or an RFC 3339 time.")
            }
            return invocation.withAdminStore { store throws(BatonError) in
                guard let outbox = store as? any WebhookOutbox else { return invocation.failure("this store has no webhook outbox") }
                let endpoint = invocation.value("endpoint")
                let count = try outbox.replayWebhooks(since: since, url: endpoint)
                if let endpoint, count == 0 { return invocation.failure("no webhook endpoint \(endpoint) (see `baton admin webhooks`)") }
                invocation.output.out("Replaying events since \(since.rfc3339) to \(plural(count, "endpoint")).")
                return .success
            }
        },
        Subcommand(
            path: "webhooks forget", overview: "Delete the delivery state of an endpoint no instance sends to any more.",
            discussion: """
                An endpoint taken out of every instance's --webhook options keeps its row
                here, and its pending events are kept for it (prune deletes only the events
                every endpoint is done with). Forgetting it lets them go. If an instance still
                sends there, it starts again with the events after that.
                """,
            usage: "--endpoint <url> [--db <path>]",
            options: [.init(name: "endpoint", valueName: "url", help: "The endpoint's URL, as `baton admin webhooks` shows it.", environment: false),
                      AdminCommand.database]
        ) { invocation in
            guard let endpoint = invocation.value("endpoint") else { return invocation.usageError("Missing expected option '--endpoint <url>'.") }
            return invocation.withAdminStore { store throws(BatonError) in
                guard let outbox = store as? any WebhookOutbox else { return invocation.failure("this store has no webhook outbox") }
                guard try outbox.forgetWebhookEndpoint(endpoint) else { return invocation.failure("no webhook endpoint \(endpoint) (see `baton admin webhooks`)") }
                invocation.output.out("Forgot webhook endpoint \(endpoint).")
                return .success
            }
        },
        Subcommand(
            path: "webhooks new-secret", overview: "Print a new random whsec_ signing secret.",
            discussion: "Write it to a file of mode 0600 for --webhook-secret-file and give the receiver the same text.",
            usage: "", options: []
        ) { invocation in
            invocation.output.out(WebhookSecret.generate())
            return .success
        },
    ]

    /// The status table: one row per endpoint.
    static func statusTable(_ statuses: [WebhookEndpointStatus], now: Instant) -> String {
        guard !statuses.isEmpty else { return "No webhook endpoint has been delivered to yet." }
        return table(["ENDPOINT", "DELIVERED", "FAILED", "PENDING", "RETRYING", "NEXT RETRY", "LAST ERROR"], statuses.map { status in
            let state = status.state
            let error = state.lastError.map { "\($0) (\(state.lastErrorAt?.rfc3339 ?? "?"))" } ?? "-"
            return [state.url, String(state.delivered), String(state.failed), String(status.pending), String(status.retrying),
                    status.nextRetryAt.map { $0 > now ? $0.rfc3339 : "now" } ?? "-", error]
        })
    }
}

import BatonCore
import BatonOperations
import BatonStorage
import Glibc

/// `baton admin stats` and `baton admin prune`.
enum MaintenanceCommands {
    static let all: [Subcommand] = [
        Subcommand(
            path: "stats", overview: "Show users, live chains, recent exchanges and reuse detections, and database size.",
            usage: "[--db <path>]", options: [AdminCommand.database] + ChainCommands.policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore(readOnly: true, policy: policy) { store throws(BatonError) in
                let stats = try store.statistics()
                invocation.output.out(table(["", ""], [
                    ["users", String(stats.users)],
                    ["live chains", String(stats.liveChains)],
                    ["exchanges, last hour", String(stats.exchangesLastHour)],
                    ["exchanges, last day", String(stats.exchangesLastDay)],
                    ["reuse detections, last hour", String(stats.reusesLastHour)],
                    ["reuse detections, last day", String(stats.reusesLastDay)],
                    ["database size (\(stats.databaseBytesCover))", "\(stats.databaseBytes) bytes"],
                ]).split(separator: "\n").dropFirst().joined(separator: "\n"))
                return .success
            }
        },
        Subcommand(
            path: "prune", overview: "Delete chains that ended long ago, with their lineage and audit events, and old webhook events.",
            discussion: """
                A chain has ended when revoked or past its absolute life or exchange window.
                Chains with a security event (reuse_detected, fork_detected, or a revocation
                by an operator, a reuse or a fork) are kept whole as evidence unless
                --include-security-events. Webhook events older than the retention that
                every endpoint is done with (delivered or given up) are deleted too; an
                event an endpoint has not reached stays. Deletes in batches of 500, so the
                server's writes interleave. --dry-run counts and deletes nothing.
                """,
            usage: "[--older-than <duration>] [--dry-run] [--include-security-events] [--db <path>]",
            options: [.init(name: "older-than", valueName: "duration", help: "Retention after a chain ended. (default: 90d)", environment: false),
                      .init(name: "dry-run", valueName: nil, help: "Say what would be deleted; delete nothing.", environment: false),
                      .init(name: "include-security-events", valueName: nil, help: "Prune chains with security events too.", environment: false),
                      AdminCommand.database] + ChainCommands.policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            let text = invocation.value("older-than") ?? "90d"
            guard let retention = parseDuration(text) else {
                return invocation.usageError("Invalid value '\(text)' for '--older-than <duration>': expected a duration such as 90d.")
            }
            let dryRun = invocation.flag("dry-run"), includeSecurity = invocation.flag("include-security-events")
            return invocation.withAdminStore(readOnly: dryRun, policy: policy) { store throws(BatonError) in
                let cutoff = SystemClock().now() - retention
                let result = try store.prune(olderThan: retention, includeSecurityEvents: includeSecurity, dryRun: dryRun, batchSize: 500)
                let events = try (store as? any WebhookOutbox)?.pruneWebhookOutbox(before: cutoff, dryRun: dryRun, batchSize: 500) ?? 0
                invocation.output.out(pruneReport(result, webhookEvents: events, before: cutoff, dryRun: dryRun))
                return .success
            }
        },
    ]
}

/// `1 chain`, `2 chains`.
func plural(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }

/// What `prune` prints: the counts, the chains kept as evidence with how to prune them too,
/// and the webhook events deleted (a line only when there were any).
func pruneReport(_ result: PruneResult, webhookEvents: Int = 0, before cutoff: Instant, dryRun: Bool) -> String {
    let counts = "\(plural(result.chains, "chain")), \(plural(result.lineageRows, "lineage row")) and \(plural(result.auditEvents, "audit event"))"
    var text = (dryRun ? "Would prune " : "Pruned ") + counts + " of chains that ended before \(cutoff.rfc3339)"
        + (dryRun ? " (dry run: nothing deleted)." : ".")
    if result.keptChains > 0 {
        text += "\n\(dryRun ? "Would keep" : "Kept") \(plural(result.keptChains, "chain")) with security events as evidence; "
            + "--include-security-events prunes them too."
    }
    if webhookEvents > 0 {
        text += "\n\(dryRun ? "Would prune" : "Pruned") \(plural(webhookEvents, "webhook event")) from before \(cutoff.rfc3339) "
            + "that every endpoint is done with."
    }
    return text
}

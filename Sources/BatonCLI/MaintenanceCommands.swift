import BatonCore
import BatonStore
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
            return invocation.withStore(readOnly: true, policy: policy) { store throws(BatonError) in
                let stats = try store.statistics()
                let size = ["", "-wal"].reduce(Int64(0)) { total, suffix in
                    var info = stat()
                    return stat(invocation.databasePath + suffix, &info) == 0 ? total + Int64(info.st_size) : total
                }
                invocation.output.out(table(["", ""], [
                    ["users", String(stats.users)],
                    ["live chains", String(stats.liveChains)],
                    ["exchanges, last hour", String(stats.exchangesLastHour)],
                    ["exchanges, last day", String(stats.exchangesLastDay)],
                    ["reuse detections, last hour", String(stats.reusesLastHour)],
                    ["reuse detections, last day", String(stats.reusesLastDay)],
                    ["database size (with WAL)", "\(size) bytes"],
                ]).split(separator: "\n").dropFirst().joined(separator: "\n"))
                return .success
            }
        },
        Subcommand(
            path: "prune", overview: "Delete chains that ended long ago, with their lineage and audit events.",
            discussion: "A chain has ended when revoked or past its absolute life or exchange window. Deletes in\nbatches of 500 chains, so the server's writes interleave.",
            usage: "[--older-than <duration>] [--db <path>]",
            options: [.init(name: "older-than", valueName: "duration", help: "Retention after a chain ended. (default: 90d)", environment: false),
                      AdminCommand.database] + ChainCommands.policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            let text = invocation.value("older-than") ?? "90d"
            guard let retention = parseDuration(text) else {
                return invocation.usageError("Invalid value '\(text)' for '--older-than <duration>': expected a duration such as 90d.")
            }
            return invocation.withStore(policy: policy) { store throws(BatonError) in
                let removed = try store.prune(olderThan: retention)
                invocation.output.out("Pruned \(plural(removed.chains, "chain")), \(plural(removed.lineageRows, "lineage row")) and \(plural(removed.auditEvents, "audit event")) of chains that ended before \((SystemClock().now() - retention).rfc3339).")
                return .success
            }
        },
    ]
}

/// `1 chain`, `2 chains`.
func plural(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }

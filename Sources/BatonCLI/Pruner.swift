import BatonCore
import BatonHTTP
import BatonOperations
import BatonStorage
import BatonSync
import Synchronization

/// Prunes ended chains, and the webhook events every endpoint is done with, on a schedule, on
/// its own thread, until stopped. Works on either store; on PostgreSQL every instance may run
/// one: prunes of several instances at once are safe and idempotent (each chain is deleted
/// once; `AdminStore.prune`).
final class Pruner: Sendable {
    private let lock = ConditionLock()
    private let stopped = Atomic<Bool>(false)

    /// Starts the schedule: every `interval`, prunes chains that ended more than `retention`
    /// ago (keeping those with security events) and logs one `pruned` line.
    init(store: any AdminStore, every interval: Duration, retention: Duration, output: some TextStreams) {
        spawn { [self] in
            while true {
                let stop = lock.withLock { () -> Bool in
                    if !stopped.load(ordering: .acquiring) { lock.wait(milliseconds: Int(interval.wholeMilliseconds)) }
                    return stopped.load(ordering: .acquiring)
                }
                if stop { return }
                do throws(BatonError) {
                    let cutoff = SystemClock().now() - retention
                    let removed = try store.prune(olderThan: retention, includeSecurityEvents: false, dryRun: false, batchSize: 500)
                    let events = try (store as? any WebhookOutbox)?.pruneWebhookOutbox(before: cutoff, dryRun: false, batchSize: 500) ?? 0
                    output.out(JSONValue.object([
                        "event": .string("pruned"), "chains": .int(Int64(removed.chains)), "lineage_rows": .int(Int64(removed.lineageRows)),
                        "audit_events": .int(Int64(removed.auditEvents)), "kept_chains": .int(Int64(removed.keptChains)),
                        "webhook_events": .int(Int64(events)),
                    ]).text)
                } catch {
                    output.err("Error: pruning failed: \(error.message)")
                }
            }
        }
    }

    /// Stops the schedule: no prune starts after this returns.
    func stop() {
        lock.withLock {
            stopped.store(true, ordering: .releasing)
            lock.broadcast()
        }
    }
}

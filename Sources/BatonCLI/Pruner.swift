import BatonCore
import BatonHTTP
import BatonStorage
import BatonStore
import BatonSync
import Synchronization

/// Prunes ended chains on a schedule, on its own thread, until stopped.
final class Pruner: Sendable {
    private let lock = ConditionLock()
    private let stopped = Atomic<Bool>(false)

    /// Starts the schedule: every `interval`, prunes chains that ended more than `retention`
    /// ago (keeping those with security events) and logs one `pruned` line.
    init(store: TokenStore, every interval: Duration, retention: Duration, output: some TextStreams) {
        spawn { [self] in
            while true {
                let stop = lock.withLock { () -> Bool in
                    if !stopped.load(ordering: .acquiring) { lock.wait(milliseconds: Int(interval.wholeMilliseconds)) }
                    return stopped.load(ordering: .acquiring)
                }
                if stop { return }
                do throws(BatonError) {
                    let removed = try store.prune(olderThan: retention)
                    output.out(JSONValue.object([
                        "event": .string("pruned"), "chains": .int(Int64(removed.chains)), "lineage_rows": .int(Int64(removed.lineageRows)),
                        "audit_events": .int(Int64(removed.auditEvents)), "kept_chains": .int(Int64(removed.keptChains)),
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

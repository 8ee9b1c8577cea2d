import BatonSync
import BatonStorage
import BatonCore
import BatonHTTP

/// Request counters and latency histograms, rendered as Prometheus text (version 0.0.4),
/// together with the store's committed totals and its own metric families.
final class Metrics: Sendable {
    /// Latency bucket bounds in seconds.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

    private struct RequestKey: Hashable, Comparable {
        var route: String
        var status: Int
        static func < (a: RequestKey, b: RequestKey) -> Bool { (a.route, a.status) < (b.route, b.status) }
    }

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: Metrics.bounds.count)
        var count = 0
        var sum = 0.0

        mutating func record(_ seconds: Double) {
            if let index = Metrics.bounds.firstIndex(where: { seconds <= $0 }) { buckets[index] += 1 }
            count += 1
            sum += seconds
        }
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
        /// Refused DPoP proofs by `failure`.
        var proofFailures: [String: Int] = [:]
    }

    private let shards = Sharded { State() }

    /// Counts one answered request.
    func record(route: String, status: Int, seconds: Double) {
        shards.withLocalShard { state in
            state.requests[RequestKey(route: route, status: status), default: 0] += 1
            // Mutated in place through the subscript: a copy taken out and stored back would
            // copy the bucket array on every request.
            state.latency[route, default: Histogram()].record(seconds)
        }
    }

    /// Counts one refused DPoP proof (`baton_dpop_proof_failures_total{failure}`).
    func recordProofFailure(_ failure: String) {
        shards.withLocalShard { $0.proofFailures[failure, default: 0] += 1 }
    }

    /// The exposition text; `replayCacheEntries`: the DPoP replay cache's size now, of at most
    /// `replayCacheCapacity` (the ratio is what an alert watches: full, it refuses every proof).
    func render(store: any LineageStore, replayCacheEntries: Int, replayCacheCapacity: Int) -> String {
        var snapshot = State()
        shards.forEachShard { shard in
            snapshot.requests.merge(shard.requests, uniquingKeysWith: +)
            snapshot.proofFailures.merge(shard.proofFailures, uniquingKeysWith: +)
            for (route, histogram) in shard.latency {
                var merged = snapshot.latency[route] ?? Histogram()
                for index in merged.buckets.indices { merged.buckets[index] += histogram.buckets[index] }
                merged.count += histogram.count
                merged.sum += histogram.sum
                snapshot.latency[route] = merged
            }
        }
        var out = ""
        out += "# HELP baton_http_requests_total HTTP requests answered, by route and status.\n# TYPE baton_http_requests_total counter\n"
        for key in snapshot.requests.keys.sorted() {
            out += "baton_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(snapshot.requests[key]!)\n"
        }
        out += "# HELP baton_http_request_duration_seconds Time from parsed request to response, by route.\n# TYPE baton_http_request_duration_seconds histogram\n"
        for route in snapshot.latency.keys.sorted() {
            let histogram = snapshot.latency[route]!
            var cumulative = 0
            for (index, bound) in Self.bounds.enumerated() {
                cumulative += histogram.buckets[index]
                out += "baton_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            out += "baton_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)\n"
            out += "baton_http_request_duration_seconds_sum{route=\"\(route)\"} \(histogram.sum)\n"
            out += "baton_http_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)\n"
        }
        let committed = store.committedTotals
        let events = committed.events
        out += "# HELP baton_exchanges_total Committed exchanges (R2) and lost-response retries (R3a).\n# TYPE baton_exchanges_total counter\n"
        out += "baton_exchanges_total{kind=\"exchanged\"} \(events[.exchanged] ?? 0)\n"
        out += "baton_exchanges_total{kind=\"retried\"} \(events[.exchangeRetried] ?? 0)\n"
        out += "# HELP baton_reuse_detections_total Reused tokens (R3) and forks (R4) detected.\n# TYPE baton_reuse_detections_total counter\n"
        out += "baton_reuse_detections_total{kind=\"reuse\"} \(events[.reuseDetected] ?? 0)\n"
        out += "baton_reuse_detections_total{kind=\"fork\"} \(events[.forkDetected] ?? 0)\n"
        out += "# HELP baton_revocations_total Chains revoked, by reason.\n# TYPE baton_revocations_total counter\n"
        for reason in RevocationReason.allCases {
            out += "baton_revocations_total{reason=\"\(reason.rawValue)\"} \(committed.revocations[reason] ?? 0)\n"
        }
        out += "# HELP baton_logins_total Login attempts, by outcome.\n# TYPE baton_logins_total counter\n"
        out += "baton_logins_total{outcome=\"succeeded\"} \(events[.loginSucceeded] ?? 0)\n"
        out += "baton_logins_total{outcome=\"failed\"} \(events[.loginFailed] ?? 0)\n"
        out += "baton_logins_total{outcome=\"throttled\"} \(events[.loginThrottled] ?? 0)\n"
        out += "# HELP baton_confirmations_total Step-up confirmations (/v1/confirm, /v1/password), by outcome.\n# TYPE baton_confirmations_total counter\n"
        out += "baton_confirmations_total{outcome=\"succeeded\"} \(events[.stepUpSucceeded] ?? 0)\n"
        out += "baton_confirmations_total{outcome=\"failed\"} \(committed.stepUpFailures[ErrorCode.invalidCredentials.rawValue] ?? 0)\n"
        out += "baton_confirmations_total{outcome=\"throttled\"} \(committed.stepUpFailures[ErrorCode.tooManyAttempts.rawValue] ?? 0)\n"
        out += "baton_confirmations_total{outcome=\"revoked\"} \(committed.revocations[.confirmFailed] ?? 0)\n"
        out += "# HELP baton_dpop_proof_failures_total Requests refused for their DPoP proof, by what failed.\n# TYPE baton_dpop_proof_failures_total counter\n"
        for failure in snapshot.proofFailures.keys.sorted() {
            out += "baton_dpop_proof_failures_total{failure=\"\(failure)\"} \(snapshot.proofFailures[failure]!)\n"
        }
        out += "# HELP baton_dpop_replay_cache_entries Accepted DPoP proofs remembered for the replay window (this process).\n# TYPE baton_dpop_replay_cache_entries gauge\n"
        out += "baton_dpop_replay_cache_entries \(replayCacheEntries)\n"
        out += "# HELP baton_dpop_replay_cache_capacity The most proofs the replay cache holds; full, it refuses every proof (503).\n# TYPE baton_dpop_replay_cache_capacity gauge\n"
        out += "baton_dpop_replay_cache_capacity \(replayCacheCapacity)\n"
        out += store.storageMetricsText()
        return out
    }
}

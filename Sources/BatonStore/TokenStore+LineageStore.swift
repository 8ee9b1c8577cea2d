import BatonCore
import BatonOperations
import BatonStorage

/// The SQLite store is one of the two `LineageStore`s the server can run on.
extension TokenStore: LineageStore {
    /// The group-commit batch sizes and the WAL checkpoint counters, in Prometheus text.
    package func storageMetricsText() -> String {
        var out = ""
        let batchSizes = self.batchSizes
        out += "# HELP baton_group_commit_batch_size Writes per committed transaction.\n# TYPE baton_group_commit_batch_size histogram\n"
        var cumulative = 0
        for (index, count) in batchSizes.enumerated() {
            cumulative += count
            if index < batchSizes.count - 1 {
                out += "baton_group_commit_batch_size_bucket{le=\"\((1 << (index + 1)) - 1)\"} \(cumulative)\n"
            }
        }
        let commit = commitStatistics
        out += "baton_group_commit_batch_size_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "baton_group_commit_batch_size_sum \(commit.writes)\n"
        out += "baton_group_commit_batch_size_count \(commit.batches)\n"
        let checkpoints = checkpointStatistics
        out += "# HELP baton_wal_checkpoints_total WAL checkpoints: the background checkpointer's, and the writer's own (to restart a long WAL).\n# TYPE baton_wal_checkpoints_total counter\n"
        out += "baton_wal_checkpoints_total{by=\"checkpointer\",mode=\"passive\"} \(checkpoints.passive)\n"
        out += "baton_wal_checkpoints_total{by=\"checkpointer\",mode=\"truncate\"} \(checkpoints.truncated)\n"
        out += "baton_wal_checkpoints_total{by=\"writer\",mode=\"passive\"} \(checkpoints.byWriter)\n"
        out += "# HELP baton_wal_writer_checkpoint_seconds Time commits waited for the writer's own checkpoints: total and longest.\n# TYPE baton_wal_writer_checkpoint_seconds gauge\n"
        out += "baton_wal_writer_checkpoint_seconds{stat=\"total\"} \(checkpoints.writerSeconds)\n"
        out += "baton_wal_writer_checkpoint_seconds{stat=\"max\"} \(checkpoints.writerLongestSeconds)\n"
        out += "# HELP baton_wal_frames_max The longest WAL seen after a commit, in frames (one page each).\n# TYPE baton_wal_frames_max gauge\n"
        out += "baton_wal_frames_max \(checkpoints.longestWAL)\n"
        return out + keyRingMetricsText()
    }
}

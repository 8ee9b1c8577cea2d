import Foundation

/// A throwaway PostgreSQL cluster for tests: a primary and, optionally, one streaming standby
/// that the primary waits for on every commit (`synchronous_standby_names`), each a `postgres`
/// of Debian's on a loopback port, run as an unprivileged user, in a directory under TMPDIR.
/// Made with `start(...)` (off the cooperative pool); stopped and removed on deinit, pass or
/// fail. Failover is the test's to drive: `killPrimary()`, then `promoteStandby()`.
package final class PostgresCluster: @unchecked Sendable {
    /// How to build the cluster.
    package struct Options: Sendable {
        /// A streaming standby the primary's commits wait for.
        package var withSynchronousStandby = false
        /// Real fsyncs. Off by default: tests kill processes, not machines, and the page cache
        /// survives a kill -9; benchmarks turn it on.
        package var fsync = false

        package init(withSynchronousStandby: Bool = false, fsync: Bool = false) {
            self.withSynchronousStandby = withSynchronousStandby
            self.fsync = fsync
        }
    }

    package let directory: String
    package let primary: PostgresNode
    package let standby: PostgresNode?
    private let binaries: PostgresBinaries

    /// Builds and starts the cluster, blocking for seconds: prefer `start(_:)` in async tests.
    package init(_ options: Options = Options()) throws {
        let binaries = try PostgresBinaries.find()
        self.binaries = binaries
        let user = try PostgresUser.current()
        directory = NSTemporaryDirectory() + "baton-pg-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try user.adopt(directory)
        primary = try PostgresNode(name: "primary", under: directory, binaries: binaries, user: user)
        standby = options.withSynchronousStandby ? try PostgresNode(name: "standby", under: directory, binaries: binaries, user: user) : nil
        try primary.initialize(fsync: options.fsync)
        try primary.start()
        try primary.query("CREATE DATABASE \(PostgresNode.database)", database: "postgres")
        if let standby {
            try standby.cloneStandby(of: primary)
            try standby.start()
            // Only now: a commit on the primary would wait forever for a standby not yet there.
            // ALTER SYSTEM writes the primary's postgresql.auto.conf, which the standby (copied
            // before) does not have, so once promoted it does not wait for a standby itself.
            try primary.query("ALTER SYSTEM SET synchronous_standby_names = '\(standby.name)'")
            try primary.query("SELECT pg_reload_conf()")
            try waitUntilStandbyIsSynchronous()
            // Commits wait for the standby once the checkpointer has taken the reload in (it
            // sets the shared flag they read; pg_stat_replication does not show it). It takes
            // a pending reload in before it serves a CHECKPOINT.
            try primary.query("CHECKPOINT")
        }
    }

    /// Builds and starts a cluster on a thread of its own.
    package static func start(_ options: Options = Options()) async throws -> PostgresCluster {
        try await offPool { try PostgresCluster(options) }
    }

    /// The primary's URI.
    package func uri(database: String = PostgresNode.database) -> String { primary.uri(database: database) }

    /// A libpq multi-host URI over primary and standby with `target_session_attrs=read-write`:
    /// libpq connects to whichever node accepts writes, so a client follows a promotion.
    package func failoverURI(database: String = PostgresNode.database) -> String {
        let hosts = ([primary] + (standby.map { [$0] } ?? [])).map { "127.0.0.1:\($0.port)" }.joined(separator: ",")
        return "postgresql://\(PostgresNode.superuser)@\(hosts)/\(database)?target_session_attrs=read-write&connect_timeout=5"
    }

    /// Runs `sql` through `failoverURI()`: on whichever node accepts writes.
    @discardableResult
    package func queryWritable(_ sql: String, database: String = PostgresNode.database) throws -> String {
        try binaries.psql(sql, uri: failoverURI(database: database))
    }

    /// Creates an empty database (so tests can share one cluster) and returns its name.
    package func createDatabase(_ name: String = "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()) throws -> String {
        try primary.query("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// Waits until the primary's pg_stat_replication lists the standby as `sync`.
    package func waitUntilStandbyIsSynchronous() throws {
        guard let standby else { throw PostgresClusterError.noStandby }
        try primary.waitUntil("\(standby.name) streaming as the synchronous standby", within: 60) {
            (try? primary.query("SELECT sync_state FROM pg_stat_replication WHERE application_name = '\(standby.name)'")) == "sync"
        }
    }

    /// kill -9 of the primary's postmaster.
    package func killPrimary() throws { try primary.killHard() }

    /// Promotes the standby (pg_ctl promote) and waits until it accepts writes.
    package func promoteStandby() throws {
        guard let standby else { throw PostgresClusterError.noStandby }
        try standby.promote()
    }

    deinit {
        standby?.stop()
        primary.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

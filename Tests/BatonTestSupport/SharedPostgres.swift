import Foundation

/// One PostgreSQL cluster per test process, started on first use and stopped when the process
/// exits; each caller gets a database of its own in it (a fresh database per test, as a
/// fresh SQLite file is). Starting a cluster takes seconds; a database, milliseconds.
package actor SharedPostgres {
    /// The process's cluster.
    package static let shared = SharedPostgres()

    private var starting: Task<PostgresCluster, any Error>?

    /// A new empty database's URI (`postgresql://baton@127.0.0.1:<port>/<name>`).
    package func newDatabaseURI() async throws -> String {
        let cluster = try await self.cluster()
        return try await offPool { cluster.uri(database: try cluster.createDatabase()) }
    }

    private func cluster() async throws -> PostgresCluster {
        if let starting { return try await starting.value }
        let task = Task { () throws -> PostgresCluster in
            let cluster = try await PostgresCluster.start()
            SharedPostgres.stopAtExit(cluster)
            return cluster
        }
        starting = task
        return try await task.value
    }

    /// A test runner exits without running deinits, so a watchdog process waits for this
    /// process to end, then stops the postmaster (immediate shutdown) and removes the files.
    private nonisolated static func stopAtExit(_ cluster: PostgresCluster) {
        guard let postmaster = cluster.primary.postmasterPID else { return }
        let script = """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            kill -QUIT \(postmaster) 2>/dev/null
            while kill -0 \(postmaster) 2>/dev/null; do sleep 0.2; done
            rm -rf '\(cluster.directory)'
            """
        let watchdog = ChildProcess()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", script]
        // Not the runner's pipes: whoever reads its output must see EOF when it exits.
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try? watchdog.run()
    }
}

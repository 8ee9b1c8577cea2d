import Foundation
import Glibc

/// One PostgreSQL server of a test cluster: its data directory under the cluster's temporary
/// directory, a loopback port, trust authentication for 127.0.0.1 only (no Unix socket), and a
/// `postgres` process this object started and alone stops. Blocking throughout: drive it off
/// the cooperative pool (`offPool`, or `PostgresCluster.start`).
package final class PostgresNode: @unchecked Sendable {
    /// The superuser and database every node has (`initdb -U baton`, `CREATE DATABASE baton`).
    package static let superuser = "baton"
    package static let database = "baton"

    package let name: String
    package let dataDirectory: String
    package let logPath: String
    package let port: UInt16
    private let binaries: PostgresBinaries
    private let user: PostgresUser
    private var process: ChildProcess?
    private var reservation: PortReservation?

    /// Reserves the node's port; nothing runs until `initialize`/`cloneStandby` and `start`.
    init(name: String, under root: String, binaries: PostgresBinaries, user: PostgresUser) throws {
        self.name = name
        self.binaries = binaries
        self.user = user
        dataDirectory = root + "/" + name
        logPath = root + "/" + name + ".log"
        // Held (bound, SO_REUSEADDR, not listening) until the server listens on it: postgres
        // sets SO_REUSEADDR too, and no other test is handed the port in between.
        let reservation = try PortReservation()
        self.reservation = reservation
        port = reservation.port
    }

    /// `postgresql://baton@127.0.0.1:<port>/<database>`.
    package func uri(database: String = PostgresNode.database) -> String {
        "postgresql://\(Self.superuser)@127.0.0.1:\(port)/\(database)"
    }

    /// The server log's last lines (for failure messages).
    package var logTail: String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(30).joined(separator: "\n")
    }

    /// A new primary's data directory: initdb, then the test settings and pg_hba.conf.
    func initialize(fsync: Bool) throws {
        try runAsServerUser("initdb", ["-D", dataDirectory, "-U", Self.superuser, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
        let settings = """

            # Baton test cluster (Tests/BatonTestSupport/PostgresNode.swift)
            listen_addresses = '127.0.0.1'
            unix_socket_directories = ''
            max_connections = 200
            shared_buffers = 32MB
            fsync = \(fsync ? "on" : "off")
            wal_level = replica
            max_wal_senders = 4
            wal_keep_size = 256MB
            hot_standby = on
            logging_collector = off

            """
        try append(settings, to: dataDirectory + "/postgresql.conf")
        // Loopback only: any local user may connect (and replicate) without a password.
        let hba = "host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
        try hba.write(toFile: dataDirectory + "/pg_hba.conf", atomically: false, encoding: .utf8)
    }

    /// A standby's data directory: a base backup of the running `primary` with `-R`
    /// (standby.signal and primary_conninfo written for streaming).
    func cloneStandby(of primary: PostgresNode) throws {
        try runAsServerUser("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primary.port), "-U", Self.superuser,
                                              "-D", dataDirectory, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync"])
    }

    /// Starts `postgres` and waits until it accepts connections. The port and the
    /// `cluster_name` (the standby's application_name for synchronous_standby_names) are given
    /// on the command line, since a standby copies the primary's configuration files.
    func start() throws {
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw PostgresClusterError.commandFailed(command: "create \(logPath)", status: -1, output: "cannot create the server log")
        }
        let (executable, arguments) = user.command(binaries.path("postgres"),
                                                   ["-D", dataDirectory, "-c", "port=\(port)", "-c", "cluster_name=\(name)"])
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        self.process = process
        PostmasterRegistry.started(process.processIdentifier)
        try waitUntil("accepting connections on port \(port)", within: 90) { isAcceptingConnections }
        reservation?.release()
        reservation = nil
    }

    /// Whether the server answers `pg_isready` (a standby in recovery counts).
    package var isAcceptingConnections: Bool {
        (try? runCommand(binaries.path("pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(port), "-t", "2"]).status) == 0
    }

    /// The postmaster's PID, from the first line of postmaster.pid.
    package var postmasterPID: pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// kill -9 of the postmaster (as a machine crash would end it), then waits until it is gone.
    /// Its backends notice the postmaster's death and exit on their own.
    package func killHard() throws {
        guard let pid = postmasterPID, let process, process.isRunning, pid == process.processIdentifier else {
            throw PostgresClusterError.commandFailed(command: "kill -9 \(name)", status: -1, output: "no running postmaster started by this test")
        }
        process.send(SIGKILL)
        process.waitUntilExit()
        PostmasterRegistry.exited(pid)
    }

    /// `pg_ctl promote -w`, as Patroni would; then waits until the node is out of recovery.
    package func promote() throws {
        try runAsServerUser("pg_ctl", ["promote", "-D", dataDirectory, "-w", "-t", "60"])
        try waitUntil("\(name) out of recovery", within: 60) { (try? query("SELECT pg_is_in_recovery()")) == "f" }
    }

    /// Runs `sql` on this node with psql (see `PostgresBinaries.psql`).
    @discardableResult
    package func query(_ sql: String, database: String = PostgresNode.database) throws -> String {
        try binaries.psql(sql, uri: uri(database: database))
    }

    /// Immediate shutdown (SIGQUIT) of a server this object started; waits for it to exit.
    func stop() {
        guard let process, process.isRunning else { return }
        process.send(SIGQUIT)
        process.waitUntilExit()
        PostmasterRegistry.exited(process.processIdentifier)
    }

    /// Polls `condition` until it holds or `seconds` pass; fails with the log tail.
    package func waitUntil(_ what: String, within seconds: Double, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            guard Date() < deadline, process?.isRunning ?? false else { throw PostgresClusterError.timedOut(waitingFor: "\(name): \(what)", log: logTail) }
            usleep(50_000)  // between polls of a condition, with a deadline
        }
    }

    private func runAsServerUser(_ program: String, _ arguments: [String]) throws {
        let (executable, arguments) = user.command(binaries.path(program), arguments)
        let result = try runCommand(executable, arguments)
        guard result.status == 0 else {
            throw PostgresClusterError.commandFailed(command: program, status: result.status, output: result.stderr + result.stdout)
        }
    }

    private func append(_ text: String, to path: String) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw PostgresClusterError.commandFailed(command: "append to \(path)", status: -1, output: "cannot open")
        }
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }

    deinit { stop() }
}

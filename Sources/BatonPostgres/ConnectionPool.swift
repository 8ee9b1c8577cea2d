import BatonSync

/// Up to `size` connections to one PostgreSQL database (or a multi-host list: libpq picks the
/// host, e.g. the read-write one). A connection is made on demand, lent to one caller at a
/// time, and dropped when it breaks, so after a failover the next borrower connects to
/// whichever server is primary now.
///
/// A new connection is made on a thread of its own while the borrower that asked for it waits
/// for any connection: that one, or one another caller gives back first. So a connect that
/// PostgreSQL is slow to accept (a fork storm, a starved machine) never fails a request while
/// a healthy connection comes back within `waitTimeout`. A borrower fails with libpq's
/// message as soon as a connect has failed and nothing else can come (no connection lent out,
/// none being made), so an unreachable database is still reported within the connect timeout;
/// and it never waits longer than `waitTimeout`.
final class ConnectionPool: @unchecked Sendable {
    private let uri: String
    private let size: Int
    private let statementTimeout: Duration
    private let waitTimeout: Duration
    private let settings: [String]
    private let lock = ConditionLock()
    private var idle: [PostgresConnection] = []  // guarded by `lock`
    private var open = 0  // guarded by `lock`: idle plus lent plus being made
    private var connecting = 0  // guarded by `lock`: being made
    private var waiting = 0  // guarded by `lock`: borrowers waiting for a connection
    /// The latest connect's failure, and how many have failed since start (a borrower compares
    /// the count with the one it started with). Guarded by `lock`.
    private var lastConnectFailure: PostgresError?
    private var isClosed = false  // guarded by `lock`
    private var counters = Counters()  // guarded by `lock`

    /// What the pool did since start, for metrics.
    struct Counters: Sendable, Equatable {
        var connects = 0
        var connectFailures = 0
        var dropped = 0
        var open = 0
    }

    /// - Parameter settings: `SET` statements each new connection runs once.
    init(uri: String, size: Int, statementTimeout: Duration, waitTimeout: Duration, settings: [String] = []) {
        self.settings = settings
        self.uri = uri
        self.size = size
        self.statementTimeout = statementTimeout
        self.waitTimeout = waitTimeout
    }

    /// Runs `body` on a connection of the pool. A connection `body` found broken is closed,
    /// not returned.
    /// - Throws: `PostgresError` from connecting or from `body`.
    func withConnection<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        let connection = try borrow()
        do {
            let value = try body(connection)
            giveBack(connection)
            return value
        } catch {
            giveBack(connection)
            throw error
        }
    }

    /// Closes the idle connections; later borrowers fail.
    func close() {
        lock.withLock {
            isClosed = true
            for connection in idle { connection.close() }
            open -= idle.count
            idle.removeAll()
            lock.broadcast()
        }
    }

    /// The pool's counters now.
    var statistics: Counters { lock.withLock { var counters = self.counters; counters.open = open; return counters } }

    private func borrow() throws(PostgresError) -> PostgresConnection {
        let deadline = ContinuousClock.now + waitTimeout
        let result = lock.withLock { () -> Result<PostgresConnection, PostgresError> in
            let failuresBefore = counters.connectFailures
            waiting += 1
            defer { waiting -= 1 }
            while true {
                if isClosed { return .failure(PostgresError(message: "the store is closed", isConnectionLost: true)) }
                if let connection = idle.popLast() { return .success(connection) }
                let failed = counters.connectFailures > failuresBefore
                // One connect in the making for each waiting borrower, up to `size`; none
                // once a connect failed while this borrower waited (it then waits only for
                // what is lent out or already being made).
                if !failed, open < size, connecting < waiting {
                    open += 1  // reserved; made on a thread of its own
                    connecting += 1
                    spawn(stackSize: nil) { [self] in connect() }
                }
                let lent = open - idle.count - connecting
                if failed, lent == 0, connecting == 0, let failure = lastConnectFailure { return .failure(failure) }
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    if failed, let failure = lastConnectFailure { return .failure(failure) }
                    return .failure(PostgresError(message: "no database connection free within \(waitTimeout)"))
                }
                lock.wait(milliseconds: max(1, Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            }
        }
        return try result.get()
    }

    /// Makes one connection (its slot reserved by `borrow`) and puts it among the idle ones for
    /// whichever borrower comes first; or records why it could not.
    private func connect() {
        let made: Result<PostgresConnection, PostgresError>
        do throws(PostgresError) {
            made = .success(try PostgresConnection(uri: uri, statementTimeout: statementTimeout, settings: settings))
        } catch {
            made = .failure(error)
        }
        lock.withLock {
            connecting -= 1
            switch made {
            case .success(let connection) where !isClosed:
                counters.connects += 1
                idle.append(connection)
            case .success(let connection):
                connection.close()
                open -= 1
            case .failure(let error):
                counters.connectFailures += 1
                lastConnectFailure = error
                open -= 1
            }
            lock.broadcast()
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        let usable = connection.isUsable
        if !usable { connection.close() }
        let anyoneWaits = lock.withLock { () -> Bool in
            if usable, !isClosed {
                idle.append(connection)
            } else {
                if !usable { counters.dropped += 1 }
                if isClosed { connection.close() }
                open -= 1
            }
            return waiting > 0
        }
        // Woken after the mutex is free, so the borrower does not wake only to wait for it.
        if anyoneWaits { lock.signal() }
    }
}

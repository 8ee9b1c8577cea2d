import BatonSync

/// Up to `size` connections to one PostgreSQL database (or a multi-host list: libpq picks the
/// host, e.g. the read-write one). A connection is made on demand, lent to one caller at a
/// time, and dropped when it breaks, so after a failover the next borrower connects to
/// whichever server is primary now. A caller never waits longer than `waitTimeout` for a
/// connection, nor longer than libpq's connect timeout for a new one.
final class ConnectionPool: @unchecked Sendable {
    private let uri: String
    private let size: Int
    private let statementTimeout: Duration
    private let waitTimeout: Duration
    private let settings: [String]
    private let lock = ConditionLock()
    private var idle: [PostgresConnection] = []  // guarded by `lock`
    private var open = 0  // guarded by `lock`: idle plus lent plus being made
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
        let waited = lock.withLock { () -> Result<PostgresConnection?, PostgresError> in
            while true {
                if isClosed { return .failure(PostgresError(message: "the store is closed", isConnectionLost: true)) }
                if let connection = idle.popLast() { return .success(connection) }
                if open < size {
                    open += 1  // reserved; made outside the lock
                    return .success(nil)
                }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .failure(PostgresError(message: "no database connection free within \(waitTimeout)")) }
                lock.wait(milliseconds: max(1, Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            }
        }
        if let reused = try waited.get() { return reused }
        do {
            let connection = try PostgresConnection(uri: uri, statementTimeout: statementTimeout, settings: settings)
            lock.withLock { counters.connects += 1 }
            return connection
        } catch {
            lock.withLock {
                open -= 1
                counters.connectFailures += 1
                lock.signal()
            }
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        let usable = connection.isUsable
        if !usable { connection.close() }
        lock.withLock {
            if usable, !isClosed {
                idle.append(connection)
            } else {
                if !usable { counters.dropped += 1 }
                if isClosed { connection.close() }
                open -= 1
            }
            lock.signal()
        }
    }
}

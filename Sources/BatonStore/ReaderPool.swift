/// Read connections for verify and lookups. In WAL mode a reader sees the last committed
/// state and never waits for the writer, so reads scale across threads. Connections are
/// opened on demand, reused, and at most `maxIdle` are kept.
final class ReaderPool: @unchecked Sendable {
    private let path: String
    private let options: Connection.Options
    private let maxIdle: Int
    private let lock = ConditionLock()
    private var idle: [Connection] = []

    init(path: String, busyTimeout: Duration, maxIdle: Int = 64) {
        self.path = path
        var options = Connection.Options()
        options.create = false
        options.readOnly = true
        options.busyTimeout = busyTimeout
        self.options = options
        self.maxIdle = maxIdle
    }

    /// Runs `body` with a reader that no other thread uses meanwhile.
    func read<T>(_ body: (Connection) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let reused = lock.withLock { idle.popLast() }
        let connection: Connection
        if let reused { connection = reused } else { connection = try Connection(path: path, options: options) }
        defer {
            lock.withLock {
                if idle.count < maxIdle { idle.append(connection) }
            }
        }
        return try body(connection)
    }

    /// Closes the idle connections.
    func close() {
        let connections = lock.withLock { () -> [Connection] in
            defer { idle.removeAll() }
            return idle
        }
        for connection in connections { connection.close() }
    }
}

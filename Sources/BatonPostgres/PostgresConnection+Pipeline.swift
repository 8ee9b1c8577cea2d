import CLibPQ
import Glibc

/// One statement with `$n` parameters, sent as text (nil is NULL).
struct PostgresStatement {
    var sql: String
    var parameters: [String?]

    init(_ sql: String, _ parameters: [String?] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}

extension PostgresConnection {
    /// How many statements one connection prepares; further ones are sent unnamed (parsed and
    /// planned each time). Baton's statements are a few dozen fixed texts.
    static let preparedLimit = 256

    /// Sends `statements` in one libpq pipeline (one write, one Sync; the server runs them in
    /// order without waiting for the client between them) and returns the rows of the last,
    /// each column as text or nil. Each statement is prepared on this connection the first
    /// time it is sent (in the same pipeline) and executed by name afterwards, so the server
    /// parses and plans it once per connection, as `pgbench -M prepared` does.
    ///
    /// The first failure is thrown once every answer is in: statements after a failed one are
    /// skipped by the server (inside a transaction, which the failure has aborted anyway).
    ///
    /// The server sends a pipeline's answers when it reaches its end (or a flush request), so
    /// the first answer is awaited `answerTimeout` for each statement before `tail`, and each
    /// later one `answerTimeout`; then a cancel request, then the connection is closed. Each
    /// statement but a COMMIT's wait for the synchronous standby is bounded by the server's
    /// own statement timeout, so this is a backstop; `tail` (the COMMIT, for one) starts with
    /// a flush request, so its wait gets `answerTimeout` of its own, as with `execute`.
    /// Everything from `tail` on also leaves together, in one write of a few hundred bytes
    /// once what came before has left: a COMMIT and its announcement
    /// (`HeadWatch.commitAnnouncing`) reach the server together or not at all.
    /// - Parameter tail: the index of the statement from which the rest must travel together.
    /// - Throws: `PostgresError`; `isConnectionLost` when the connection broke (it is then
    ///   closed), or when the server no longer knows a statement prepared here.
    @discardableResult
    func pipeline(_ statements: [PostgresStatement], tail: Int = 0) throws(PostgresError) -> [[String?]] {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        guard PQenterPipelineMode(handle) == 1 else { throw abandonPipeline(handle) }
        var commands: [PipelineCommand] = []
        var preparing: [String: String] = [:]
        for (index, statement) in statements.enumerated() {
            if index == tail, index > 0 {
                // The answers so far come back now, and what is queued leaves now.
                guard PQsendFlushRequest(handle) == 1, PQflush(handle) == 0 else { throw abandonPipeline(handle) }
            }
            var name = preparedNames[statement.sql] ?? preparing[statement.sql]
            if name == nil, preparedNames.count + preparing.count < Self.preparedLimit {
                let fresh = "baton_\(preparedNames.count + preparing.count)"
                guard PQsendPrepare(handle, fresh, statement.sql, Int32(statement.parameters.count), nil) == 1 else {
                    throw abandonPipeline(handle)
                }
                preparing[statement.sql] = fresh
                commands.append(.prepare(name: fresh, sql: statement.sql))
                name = fresh
            }
            let sent = Self.withOptionalCStrings(statement.parameters) { values in
                if let name {
                    return PQsendQueryPrepared(handle, name, Int32(statement.parameters.count), values, nil, nil, 0)
                }
                return PQsendQueryParams(handle, statement.sql, Int32(statement.parameters.count), nil, values, nil, nil, 0)
            }
            guard sent == 1 else { throw abandonPipeline(handle) }
            commands.append(.execute(index: index))
        }
        guard PQpipelineSync(handle) == 1 else { throw abandonPipeline(handle) }

        var failure: PostgresError?
        var rows: [[String?]] = []
        var wait = AnswerWait(timeout: answerTimeout, statements: max(1, tail > 0 ? tail : statements.count))
        for command in commands {
            while let result = try nextResult(handle, &wait) {
                defer { PQclear(result) }
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_ABORTED { continue }
                guard Self.isSuccess(result) else {
                    if failure == nil { failure = error(of: result) }
                    continue
                }
                switch command {
                case .prepare(let name, let sql): preparedNames[sql] = name
                case .execute(let index): if index == statements.count - 1 { rows = Self.rows(of: result) }
                }
            }
        }
        // The end of the pipeline. An error may come before it: the commit of the implicit
        // transaction that the statements after a COMMIT run in (the announcement's) happens
        // here, and can fail ("too many notifications").
        var ends = 0
        while true {
            // A broken connection answers nothing more: give up rather than wait for a Sync.
            guard PQstatus(handle) == CONNECTION_OK, ends < 4 else { throw abandonPipeline(handle) }
            guard let result = try nextResult(handle, &wait) else {
                ends += 1
                continue
            }
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC { break }
            guard status == PGRES_FATAL_ERROR else { throw abandonPipeline(handle) }
            if failure == nil { failure = error(of: result) }
        }
        guard PQexitPipelineMode(handle) == 1 else { throw abandonPipeline(handle) }
        if var failure {
            // The server forgot what this connection prepared (a pooler's DISCARD), or a
            // statement's result no longer fits its plan (a column's type changed): this
            // connection's prepared statements cannot be trusted; a new one starts afresh.
            if failure.sqlState == "26000" || failure.sqlState == "0A000" {
                close()
                failure.isConnectionLost = true
            }
            throw failure
        }
        return rows
    }

    /// What a pipeline sent, in order: each prepare and each execution has its own results.
    private enum PipelineCommand {
        case prepare(name: String, sql: String)
        case execute(index: Int)
    }

    /// The deadline for the next answer (`pipeline`'s and `execute`'s): `timeout` from the
    /// last answer; once passed, a cancel request and `timeout` again; then the connection is
    /// given up.
    struct AnswerWait {
        let timeout: Duration
        var deadline: ContinuousClock.Instant
        var cancelled = false

        init(timeout: Duration, statements: Int = 1) {
            self.timeout = timeout
            deadline = .now + timeout * statements
        }
    }

    /// The next result, or nil at the end of one command's results; waits as `AnswerWait` says.
    func nextResult(_ handle: OpaquePointer, _ wait: inout AnswerWait) throws(PostgresError) -> OpaquePointer? {
        while PQisBusy(handle) != 0 {
            let remaining = Self.milliseconds(until: wait.deadline)
            if remaining == 0 {
                guard !wait.cancelled else {
                    close()
                    throw PostgresError(message: "no answer from the server even after a cancel request; connection closed", isConnectionLost: true)
                }
                cancel(handle)
                wait.cancelled = true
                wait.deadline = .now + wait.timeout
                continue
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(remaining))
            if ready < 0, errno != EINTR {
                let message = "poll: " + String(cString: strerror(errno))
                close()
                throw lost(message)
            }
            if ready > 0, PQconsumeInput(handle) != 1 {
                let message = String(cString: PQerrorMessage(handle))
                close()
                throw lost(message)
            }
        }
        let result = PQgetResult(handle)
        if result != nil { wait = AnswerWait(timeout: wait.timeout) }
        return result
    }

    /// A pipeline that cannot go on (libpq refused to send, or the answers were not what was
    /// sent): the connection's state is unknown, so it is closed.
    private func abandonPipeline(_ handle: OpaquePointer) -> PostgresError {
        let message = String(cString: PQerrorMessage(handle))
        close()
        return lost(message.isEmpty ? "the pipeline's answers did not match what was sent" : message)
    }

    /// Every row of `result`, each column as text or nil.
    static func rows(of result: OpaquePointer) -> [[String?]] {
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { return [] }
        var rows: [[String?]] = []
        let rowCount = PQntuples(result), columnCount = PQnfields(result)
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            rows.append((0..<columnCount).map { column in
                PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
            })
        }
        return rows
    }
}

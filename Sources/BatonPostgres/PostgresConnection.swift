import CLibPQ
import Glibc

/// One libpq connection: the only type that calls `PQ*`. Every `PGresult` is cleared in a
/// `defer`; rows are copied out as text before it is. Not thread-safe: the pool lends it to
/// one caller at a time.
final class PostgresConnection {
    private(set) var handle: OpaquePointer?
    /// Warnings the server sent since the last `takeWarnings()`, counted by libpq's notice receiver.
    private let warnings = WarningCount()
    /// How long a command's answer is awaited before Baton cancels it (`answer(to:)`).
    let answerTimeout: Duration
    /// The statements prepared on this connection: SQL text → name (`pipeline(_:)`).
    var preparedNames: [String: String] = [:]

    /// The notice receiver's state, reached through libpq's `arg` pointer.
    private final class WarningCount { var count = 0 }

    /// Connects with `uri` (libpq's URI or key=value syntax, multi-host lists included).
    /// Settings the URI does not name get Baton's defaults: a bounded connect, TCP keepalives
    /// that notice a dead peer within seconds, `application_name` (`applicationName`). Then
    /// bounds every statement and lock wait.
    /// - Throws: `PostgresError` with libpq's message (which never contains the password).
    /// - Parameter settings: further `SET` statements run once connected (`ConnectionPool`).
    init(uri: String, statementTimeout: Duration, applicationName: String = "baton", settings: [String] = []) throws(PostgresError) {
        // A second more than the server's own statement timeout, which so ends ordinary statements first.
        answerTimeout = statementTimeout + .seconds(1)
        // expand_dbname: `dbname` is the URI; keywords before it are defaults it may override.
        let keys = ["connect_timeout", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                    "application_name", "dbname"]
        let values = ["3", "5", "2", "2", "5000", applicationName, uri]
        handle = Self.withCStrings(keys) { keyPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keyPointers, valuePointers, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            close()
            throw PostgresError(message: Self.firstLine(message), isConnectionLost: true)
        }
        // Count the WARNING a COMMIT gives (and still succeeds) when a cancel (`answer(to:)`)
        // ends its wait for the synchronous standby: raised in `SyncRepWaitForLSN` (the
        // routine field is never translated). Other warnings, such as "the NOTIFY queue is
        // half full", say nothing about a commit.
        PQsetNoticeReceiver(handle, { argument, result in
            guard let argument, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
                  String(cString: severity) == "WARNING" else { return }
            let routine = PQresultErrorField(result, Int32(UInt8(ascii: "R"))).map { String(cString: $0) }
            if routine == nil || routine == "SyncRepWaitForLSN" { Unmanaged<WarningCount>.fromOpaque(argument).takeUnretainedValue().count += 1 }
        }, Unmanaged.passUnretained(warnings).toOpaque())
        let milliseconds = statementTimeout.components.seconds * 1000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
        do throws(PostgresError) {
            try execute("SET statement_timeout = \(milliseconds)")
            try execute("SET lock_timeout = \(milliseconds)")
            try execute("SET idle_in_transaction_session_timeout = \(milliseconds * 2)")
            for setting in settings { try execute(setting) }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Closes the connection (idempotent).
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// The number of WARNING notices since the last call, then zero.
    func takeWarnings() -> Int {
        defer { warnings.count = 0 }
        return warnings.count
    }

    /// Whether the connection is inside a transaction block that a failed statement aborted
    /// (only ROLLBACK is accepted there): whatever it wrote is not committed.
    var isInFailedTransaction: Bool { handle.map { PQtransactionStatus($0) == PQTRANS_INERROR } ?? false }

    /// Whether libpq still considers the connection usable.
    var isUsable: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Runs `sql` with `$1...` parameters sent as text (nil is NULL) and returns every row,
    /// each column as text or nil. A one-statement `pipeline(_:)`.
    /// - Throws: `PostgresError`; `isConnectionLost` when the connection broke.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        try pipeline([PostgresStatement(sql, parameters)])
    }

    /// Runs statements without parameters (several separated by `;` allowed).
    func execute(_ sql: String) throws(PostgresError) {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        let result = try answer(to: PQsendQuery(handle, sql))
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(of: result) }
    }

    /// The answer to the command just sent (`sent`: what `PQsend*` returned): the first error
    /// result if any statement failed, else the last result. The caller clears it.
    ///
    /// Waits at most `answerTimeout`, then asks the server to cancel and waits that long again;
    /// with still no answer the connection is closed. The server's own `statement_timeout`
    /// (shorter) ends ordinary statements first; this bound is for what it does not cover:
    /// PostgreSQL disables the statement timeout before a COMMIT's wait for the synchronous
    /// standby, so with the standby gone a COMMIT would wait forever. The cancel ends that
    /// wait; the commit then stands locally with a WARNING, which the store refuses to
    /// acknowledge (503).
    private func answer(to sent: Int32) throws(PostgresError) -> OpaquePointer? {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        guard sent == 1 else { throw lost(String(cString: PQerrorMessage(handle))) }
        var wait = AnswerWait(timeout: answerTimeout)
        var chosen: OpaquePointer?
        do throws(PostgresError) {
            while let result = try nextResult(handle, &wait) {
                if let kept = chosen, !Self.isSuccess(kept) {
                    PQclear(result)  // keep the first failure
                } else {
                    PQclear(chosen)
                    chosen = result
                }
            }
        } catch {
            PQclear(chosen)
            throw error
        }
        guard let chosen else { throw lost(String(cString: PQerrorMessage(handle))) }
        return chosen
    }

    /// The payloads of the notifications on `channel` the server sent, in its order: those
    /// already received, else those that arrive within `milliseconds`. Returns early, maybe
    /// with none, when `wake` (a descriptor) becomes readable. For a connection that ran
    /// `LISTEN channel`; call it between commands only.
    /// - Throws: `PostgresError` (`isConnectionLost`) when the connection broke.
    func notifications(on channel: String, waitingUpTo milliseconds: Int32, orUntilReadable wake: Int32) throws(PostgresError) -> [String] {
        guard let handle else { throw PostgresError(message: "connection closed", isConnectionLost: true) }
        var payloads = drainNotifications(handle, channel)
        guard payloads.isEmpty else { return payloads }
        var descriptors = [pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&descriptors, 2, milliseconds)
        if ready < 0, errno != EINTR { throw lost("poll: " + String(cString: strerror(errno))) }
        if descriptors[0].revents != 0 {
            guard PQconsumeInput(handle) == 1 else {
                let message = String(cString: PQerrorMessage(handle))
                close()
                throw lost(message)
            }
            payloads = drainNotifications(handle, channel)
        }
        return payloads
    }

    private func drainNotifications(_ handle: OpaquePointer, _ channel: String) -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            defer { PQfreemem(notification) }
            if String(cString: notification.pointee.relname) == channel { payloads.append(String(cString: notification.pointee.extra)) }
        }
        return payloads
    }

    /// Asks the server to cancel the running command (a separate connection, as libpq does).
    func cancel(_ handle: OpaquePointer) {
        guard let request = PQgetCancel(handle) else { return }
        defer { PQfreeCancel(request) }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(request, &message, Int32(message.count))
    }

    /// Whole milliseconds from now until `deadline` (rounded up), 0 once it has passed.
    static func milliseconds(until deadline: ContinuousClock.Instant) -> Int {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return 0 }
        return Int(left.components.seconds) * 1000 + Int(left.components.attoseconds / 1_000_000_000_000_000) + 1
    }

    static func isSuccess(_ result: OpaquePointer) -> Bool {
        let status = PQresultStatus(result)
        return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
    }

    /// The error a failed result carries.
    func error(of result: OpaquePointer?) -> PostgresError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? handle.map { String(cString: PQerrorMessage($0)) } ?? ""
        return PostgresError(sqlState: state, message: Self.firstLine(message), isConnectionLost: !isUsable)
    }

    func lost(_ message: String) -> PostgresError {
        PostgresError(message: Self.firstLine(message), isConnectionLost: true)
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n", maxSplits: 1).first ?? "").trimmingCharacters(in: " ")
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        withOptionalCStrings(strings, { pointers in body(pointers + [nil]) })
    }

    static func withOptionalCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

@available(*, unavailable) extension PostgresConnection: Sendable {}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}

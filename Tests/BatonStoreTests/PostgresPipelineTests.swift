@testable import BatonPostgres
import BatonTestSupport
import Testing

/// The statements of a transaction go to a real PostgreSQL in libpq pipelines, prepared once
/// per connection (`PostgresConnection.pipeline`, `Transaction.isDeferrable`), and a watching
/// instance commits and announces in one of them (`HeadWatch.commitAnnouncing`). What must
/// not change: the first failure is thrown and nothing after it runs, a failed transaction
/// commits nothing and announces nothing, and the connection stays usable.
@Suite(.serialized)
struct PostgresPipelineTests {
    private static func connection() async throws -> PostgresConnection {
        let connection = try PostgresConnection(uri: try await SharedPostgres.shared.newDatabaseURI(), statementTimeout: .seconds(5))
        try connection.execute("CREATE TABLE t (id bigint PRIMARY KEY, note text)")
        return connection
    }

    @Test func aPipelineAnswersItsLastStatementAndPreparesEachTextOnce() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        let rows = try connection.pipeline([
            PostgresStatement("INSERT INTO t (id, note) VALUES ($1, $2)", ["1", "one"]),
            PostgresStatement("INSERT INTO t (id, note) VALUES ($1, $2)", ["2", nil]),
            PostgresStatement("SELECT id, note FROM t ORDER BY id"),
        ])
        #expect(rows == [["1", "one"], ["2", nil]])
        #expect(connection.preparedNames.count == 2, "the same text twice in one pipeline is prepared once")
        try connection.pipeline([PostgresStatement("INSERT INTO t (id, note) VALUES ($1, $2)", ["3", "three"])])
        #expect(connection.preparedNames.count == 2)
        #expect(try connection.query("SELECT count(*) FROM t") == [["3"]])
    }

    @Test func theFirstFailureIsThrownAndNothingAfterItRuns() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        try connection.execute("BEGIN")
        #expect {
            try connection.pipeline([
                PostgresStatement("INSERT INTO t (id, note) VALUES ($1, $2)", ["1", "one"]),
                PostgresStatement("INSERT INTO t (id, note) VALUES ($1, $2)", ["1", "again"]),
                PostgresStatement("SELECT no_such_column FROM t"),
                PostgresStatement("COMMIT"),
            ])
        } throws: { error in
            (error as? PostgresError)?.isUniqueViolation == true
        }
        #expect(connection.isInFailedTransaction, "the COMMIT after the failure did not run")
        try connection.execute("ROLLBACK")
        #expect(!connection.isInFailedTransaction)
        #expect(try connection.query("SELECT count(*) FROM t") == [["0"]])
        #expect(connection.isUsable)
    }

    @Test func aStatementThatFailsToPrepareIsNotRememberedAsPrepared() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        #expect(throws: PostgresError.self) { try connection.query("SELECT nonsense FROM t") }
        #expect(connection.preparedNames["SELECT nonsense FROM t"] == nil)
        try connection.execute("ALTER TABLE t ADD COLUMN nonsense int")
        #expect(try connection.query("SELECT nonsense FROM t") == [])
    }

    /// A statement whose prepared form the server forgot (a pooler's `DISCARD ALL`) fails
    /// once, as a lost connection, and the connection is closed rather than failing forever.
    @Test func aForgottenPreparedStatementClosesTheConnection() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        #expect(try connection.query("SELECT count(*) FROM t") == [["0"]])
        try connection.execute("DEALLOCATE ALL")
        #expect {
            try connection.query("SELECT count(*) FROM t")
        } throws: { error in
            (error as? PostgresError)?.isConnectionLost == true
        }
        #expect(!connection.isUsable)
    }

    /// A backend that dies under a pipeline (an operator's `pg_terminate_backend`, a crash)
    /// makes it throw a lost connection, closed, never wait for answers that cannot come.
    @Test func aTerminatedBackendEndsThePipelineAsALostConnection() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(5))
        defer { connection.close() }
        let pid = try #require(try connection.query("SELECT pg_backend_pid()").first?[0] ?? nil)
        let other = try PostgresConnection(uri: uri, statementTimeout: .seconds(5))
        defer { other.close() }
        #expect(try other.query("SELECT pg_terminate_backend($1::int)", [pid]) == [["t"]])
        let started = ContinuousClock.now
        #expect {
            try connection.pipeline([PostgresStatement("BEGIN"), PostgresStatement("SELECT 1"), PostgresStatement("COMMIT")])
        } throws: { error in
            (error as? PostgresError)?.isConnectionLost == true
        }
        #expect(!connection.isUsable)
        #expect(ContinuousClock.now - started < .seconds(5), "it waited for answers that could not come")
    }

    @Test func moreTextsThanTheLimitAreSentUnprepared() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        for number in 0..<(PostgresConnection.preparedLimit + 10) {
            #expect(try connection.query("SELECT \(number)::text") == [["\(number)"]])
        }
        #expect(connection.preparedNames.count == PostgresConnection.preparedLimit)
    }

    /// A transaction's writes wait for the next statement with an answer; a failing one is
    /// thrown there, with the writes before it undone.
    @Test func aDeferredWriteFailsAtTheNextAnswerAndCommitsNothing() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        let transaction = Transaction(connection, defersWrites: true)
        try transaction.query("BEGIN")
        try transaction.query("INSERT INTO t (id, note) VALUES ($1, $2)", ["1", "one"])
        try transaction.query("INSERT INTO t (id, note) VALUES ($1, $2)", ["1", "twice"])
        #expect(!transaction.hasSent)
        #expect(throws: PostgresError.self) { try transaction.finish([PostgresStatement("COMMIT")]) }
        #expect(connection.isInFailedTransaction)
        try connection.execute("ROLLBACK")
        #expect(try connection.query("SELECT count(*) FROM t") == [["0"]])
    }

    /// An import's thousands of writes go in bounded pipelines: at most 64 wait.
    @Test func manyWritesGoInBoundedPipelines() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        let transaction = Transaction(connection, defersWrites: true)
        try transaction.query("BEGIN")
        let note = String(repeating: "x", count: 2000)
        let waiting = Transaction.deferredLimit - 2  // and BEGIN
        for id in 1...waiting { try transaction.query("INSERT INTO t (id, note) VALUES ($1, $2)", [String(id), note]) }
        #expect(!transaction.hasSent, "BEGIN and 62 writes wait")
        try transaction.query("INSERT INTO t (id, note) VALUES ($1, $2)", [String(waiting + 1), note])
        #expect(transaction.hasSent, "the 64th statement sent them")
        for id in (waiting + 2)...5000 { try transaction.query("INSERT INTO t (id, note) VALUES ($1, $2)", [String(id), note]) }
        try transaction.finish([PostgresStatement("COMMIT")])
        #expect(try connection.query("SELECT count(*) FROM t") == [["5000"]])
    }

    @Test func onlyStatementsWithoutAnAnswerWait() {
        #expect(Transaction.isDeferrable("BEGIN"))
        #expect(Transaction.isDeferrable("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
        #expect(Transaction.isDeferrable("INSERT INTO audit (at, kind) VALUES ($1, $2)"))
        #expect(Transaction.isDeferrable("UPDATE chains SET head_presented = true WHERE id = $1"))
        #expect(!Transaction.isDeferrable("INSERT INTO users (username) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id"))
        #expect(!Transaction.isDeferrable("DELETE FROM identity_links WHERE issuer = $1 RETURNING user_id"))
        #expect(!Transaction.isDeferrable("SELECT id FROM chains WHERE id = $1 FOR UPDATE"))
        #expect(!Transaction.isDeferrable("COMMIT"))
    }

    /// The announcement's payload, computed by PostgreSQL from the triggers' list, reads back
    /// as the changes it lists, or as everything.
    @Test(arguments: [
        (nil, nil), ("", nil), (" ", nil),
        (" 12", "c12"), (" 12 13 12", "c12 13 12"), (" 12 *", "*"), (" *", "*"),
    ] as [(String?, String?)])
    func theAnnouncedPayloadIsTheTriggersList(_ list: String?, _ payload: String?) async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        let rows = try connection.query("SELECT \(HeadAnnouncement.payloadSQL(of: "$1::text"))", [list])
        #expect(rows == [[payload]])
    }

    @Test func aListTooLongForOnePayloadAnnouncesEverything() async throws {
        let connection = try await Self.connection()
        defer { connection.close() }
        let many = (1...2000).map { " \(Int64(1) << 40 + Int64($0))" }.joined()
        let rows = try connection.query("SELECT \(HeadAnnouncement.payloadSQL(of: "$1::text"))", [many])
        #expect(rows == [["*"]])
        let fits = (1...500).map { " \($0)" }.joined()
        let payload = try #require(try connection.query("SELECT \(HeadAnnouncement.payloadSQL(of: "$1::text"))", [fits]).first?[0] ?? nil)
        #expect(HeadAnnouncement(payload: payload) == .chains(Array(1...500)))
    }

    /// The one-round-trip commit: a transaction that changed a row is announced after its
    /// COMMIT with the writer's tag and the triggers' list; one that changed nothing with its
    /// tag alone (it is still the writer's round); one that failed before its COMMIT, nothing.
    @Test func aCommitAnnouncesItsTagAndWhatItChangedAndAFailedOneNothing() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let setup = try PostgresConnection(uri: uri, statementTimeout: .seconds(5))
        defer { setup.close() }
        try setup.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        let listener = try PostgresConnection(uri: uri, statementTimeout: .seconds(5))
        defer { listener.close() }
        try listener.execute("LISTEN \(HeadWatch.channel)")
        let writer = try PostgresConnection(uri: uri, statementTimeout: .seconds(5))
        defer { writer.close() }
        func commitAnnouncing(tag: UInt64) -> [PostgresStatement] {
            HeadWatch.commitAnnouncing(instance: "k3x9", ticket: HeadWatch.WriteTicket(tag: tag, listen: 1))
        }

        // What the triggers do for a serving instance: list the changed chains in baton.changed.
        let transaction = Transaction(writer, defersWrites: true)
        try transaction.query("BEGIN")
        try transaction.query("SELECT set_config('baton.changed', ' 41 42', true)")
        try transaction.finish(commitAnnouncing(tag: 7))
        #expect(!writer.isInFailedTransaction)
        let announced = try listener.notifications(on: HeadWatch.channel, waitingUpTo: 5000, orUntilReadable: -1)
        #expect(announced == ["w k3x9 7 c41 42"])
        #expect(announced.map(HeadAnnouncement.init(payload:)) == [.write(.init(instance: "k3x9", tag: 7, change: .chains([41, 42])))])

        let failing = Transaction(writer, defersWrites: true)
        try failing.query("BEGIN")
        try failing.query("SELECT set_config('baton.changed', ' 43', true)")
        try failing.query("INSERT INTO t (id) VALUES ($1)", ["1"])
        try failing.query("INSERT INTO t (id) VALUES ($1)", ["1"])
        #expect(throws: PostgresError.self) { try failing.finish(commitAnnouncing(tag: 8)) }
        #expect(writer.isInFailedTransaction)
        try writer.execute("ROLLBACK")

        // A transaction that changed nothing announces its tag only; the failed one, nothing.
        let quiet = Transaction(writer, defersWrites: true)
        try quiet.query("BEGIN")
        try quiet.finish(commitAnnouncing(tag: 9))
        try setup.execute("NOTIFY \(HeadWatch.channel), 'marker'")
        var arrived: [String] = []
        while !arrived.contains("marker") {
            let batch = try listener.notifications(on: HeadWatch.channel, waitingUpTo: 5000, orUntilReadable: -1)
            guard !batch.isEmpty else { break }
            arrived += batch
        }
        #expect(arrived == ["w k3x9 9", "marker"])
        #expect(try setup.query("SELECT count(*) FROM t") == [["0"]])
    }
}

@testable import BatonCore
@testable import BatonPostgres
import BatonStorage
import BatonTestSupport
import Testing

/// A commit the synchronous standby never confirmed is not acknowledged. PostgreSQL, when the
/// wait for the standby is cancelled (by the connection, past its answer deadline), commits locally and says
/// so only with a WARNING ("canceling wait for synchronous replication … The transaction has
/// already committed locally, but might not have been replicated to the standby"). Such a
/// commit could vanish in a failover, so the store answers 503, never 200; the client's retry
/// with the same token (R3a) then gets its successor once the standby is back.
/// PostgreSQL only: synchronous replication and its WARNING are PostgreSQL's (a SQLite commit
/// is confirmed by its own fsync, or fails).
@Suite(.serialized)
struct PostgresUnconfirmedCommitTests {
    /// PostgreSQL does not apply `statement_timeout` to a COMMIT's wait for the standby: without
    /// the connection's own deadline and cancel this exchange would wait forever (the time
    /// limit turns that into a failure instead of a hung run). The limit counts the start of
    /// the primary and its standby too: 3 minutes, since beside the other store suites (most
    /// of them now on PostgreSQL as well, each creating databases in the shared cluster) on
    /// a loaded 2-core machine, 1 minute was once not enough for the whole test.
    @Test(.timeLimit(.minutes(3)))
    func anExchangeWhoseStandbyNeverConfirmsIsUnavailableAndItsRetrySucceeds() async throws {
        let cluster = try await PostgresCluster.start()
        try await offPool {
            let uri = cluster.uri()
            var options = PostgresStore.Options()
            options.statementTimeout = .seconds(1)
            options.hashParameters.memoryKiB = 1024
            options.hashParameters.iterations = 1
            var policy = Policy()
            policy.retryGrace = .seconds(300)
            let store = try PostgresStore(uri: uri, key: TokenKey.generate(), policy: policy, options: options)
            defer { store.close() }
            try store.createUser("alice", password: "correct horse battery")
            let login = try store.login(LoginRequest(username: "alice", password: "correct horse battery", deviceID: "phone-1", deviceClass: .mobile))
            let laptop = try store.login(LoginRequest(username: "alice", password: "correct horse battery", deviceID: "laptop", deviceClass: .desktop))

            // From now on every commit waits for a synchronous standby that never answers.
            try cluster.primary.query("ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'")
            try cluster.primary.query("SELECT pg_reload_conf()")
            try cluster.primary.waitUntil("synchronous_standby_names in force", within: 10) {
                (try? cluster.primary.query("SHOW synchronous_standby_names"))?.contains("absent_standby") == true
            }
            // A commit waits for a standby once the checkpointer has taken the reload in (it sets
            // the flag commits read); it does so before it serves a CHECKPOINT.
            try cluster.primary.query("CHECKPOINT")
            let context = RequestContext(deviceID: "phone-1")
            var unavailable: String?
            do throws(BatonError) { _ = try store.exchange(login.token, context: context) } catch {
                if case .unavailable(let explanation) = error { unavailable = explanation }
            }
            let explanation = try #require(unavailable, "the unconfirmed exchange must not be answered as a success")
            #expect(explanation.contains("not confirmed by the synchronous standby"))
            #expect(!store.isWritable(), "/readyz must answer 503 while commits are not confirmed")
            // A first verify of a head writes its "presented" mark (R3a) in an autocommit
            // statement, whose commit waits for the standby too: not acknowledged either.
            var verifyUnavailable = false
            do throws(BatonError) { _ = try store.verify(laptop.token, maxAge: nil, context: RequestContext()) } catch {
                if case .unavailable = error { verifyUnavailable = true }
            }
            #expect(verifyUnavailable, "a verify whose presented mark the standby never confirmed must not answer 200")
            // It did commit locally: the chain's head moved on.
            #expect(try cluster.primary.query("SELECT head_generation FROM chains", database: PostgresNode.database).contains("1"))

            // The standby requirement lifted, the client retries with the same token (R3a):
            // a successor, no reuse.
            try cluster.primary.query("ALTER SYSTEM RESET synchronous_standby_names")
            try cluster.primary.query("SELECT pg_reload_conf()")
            try cluster.primary.waitUntil("synchronous_standby_names reset", within: 10) {
                (try? cluster.primary.query("SHOW synchronous_standby_names"))?.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty == true
            }
            try cluster.primary.query("CHECKPOINT")  // the checkpointer has taken the reset in (above)
            let retried = try store.exchange(login.token, context: context)
            #expect(retried.generation == 1)
            #expect((try? store.verify(retried.token, maxAge: nil, context: RequestContext())) != nil)
            let kinds = try cluster.primary.query("SELECT kind FROM audit ORDER BY id", database: PostgresNode.database)
            #expect(kinds.contains("exchange_retried") && !kinds.contains("reuse_detected"), "\(kinds)")
        }
    }
}

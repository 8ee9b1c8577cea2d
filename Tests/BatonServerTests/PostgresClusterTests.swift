import Foundation
import Glibc
import Testing

/// The PostgreSQL test-cluster harness itself: the synchronous standby really has what the
/// primary acknowledged, a kill -9 and a promotion lose none of it, and the servers run
/// unprivileged. The store's and the failover tests build on these properties.
@Suite struct PostgresClusterTests {
    @Test func aCommitAcknowledgedByThePrimaryIsOnTheSynchronousStandby() async throws {
        let cluster = try await PostgresCluster.start(.init(withSynchronousStandby: true))
        let (syncState, onStandby) = try await offPool {
            try cluster.primary.query("CREATE TABLE acknowledged (id integer PRIMARY KEY, note text NOT NULL)")
            // remote_apply: the commit returns once the standby has replayed it, so it is visible there.
            try cluster.primary.query("SET synchronous_commit = remote_apply; INSERT INTO acknowledged VALUES (1, 'replicated')")
            let state = try cluster.primary.query("SELECT sync_state FROM pg_stat_replication")
            return (state, try cluster.standby!.query("SELECT note FROM acknowledged WHERE id = 1"))
        }
        #expect(syncState == "sync")
        #expect(onStandby == "replicated")
    }

    @Test func afterKillingThePrimaryAndPromotingTheStandbyEveryAcknowledgedRowIsThereAndWritesWork() async throws {
        let cluster = try await PostgresCluster.start(.init(withSynchronousStandby: true))
        let (rows, inRecovery, writable) = try await offPool {
            try cluster.primary.query("CREATE TABLE acknowledged (id integer PRIMARY KEY)")
            // synchronous_commit = on (the default): acknowledged once the standby has flushed it.
            try cluster.primary.query("INSERT INTO acknowledged SELECT generate_series(1, 100)")
            try cluster.primary.query("INSERT INTO acknowledged VALUES (101)")
            try cluster.killPrimary()
            try cluster.promoteStandby()
            let rows = try cluster.standby!.query("SELECT count(*) || ',' || max(id) FROM acknowledged")
            let inRecovery = try cluster.standby!.query("SELECT pg_is_in_recovery()")
            // The multi-host URI finds the promoted node, which now takes writes.
            let writable = try cluster.queryWritable("INSERT INTO acknowledged VALUES (102) RETURNING inet_server_port()")
            return (rows, inRecovery, writable)
        }
        #expect(rows == "101,101")
        #expect(inRecovery == "f")
        #expect(writable == String(cluster.standby!.port))
        #expect(cluster.primary.isAcceptingConnections == false)
    }

    @Test func serversRunAsAnUnprivilegedUserOnLoopbackOnly() async throws {
        let cluster = try await PostgresCluster.start()
        let (listen, sockets) = try await offPool {
            (try cluster.primary.query("SHOW listen_addresses"), try cluster.primary.query("SHOW unix_socket_directories"))
        }
        #expect(listen == "127.0.0.1")
        #expect(sockets == "")
        let pid = try #require(cluster.primary.postmasterPID)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(separator: "\t").dropFirst().first
        #expect(uid != nil && uid != "0")
        #expect(cluster.standby == nil)
        #expect(throws: PostgresClusterError.noStandby) { try cluster.promoteStandby() }
    }

    @Test func aTestDatabaseIsEmptyAndSeparate() async throws {
        let cluster = try await PostgresCluster.start()
        let tables = try await offPool { () -> String in
            let name = try cluster.createDatabase()
            try cluster.primary.query("CREATE TABLE only_here (id integer)")
            return try cluster.primary.query("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: name)
        }
        #expect(tables == "0")
    }
}

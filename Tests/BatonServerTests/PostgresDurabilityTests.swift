import BatonTestSupport
import Foundation
import Testing

/// `baton serve` on PostgreSQL promises what a commit there promises: a cluster that may lose
/// acknowledged commits to a power cut (fsync off) is refused unless declared a throwaway, and
/// a weaker `synchronous_commit` is raised on Baton's own connections, said at start.
@Suite(.serialized)
struct PostgresDurabilityTests {
    @Test func aClusterWithFsyncOffIsRefusedUnlessDeclaredAThrowaway() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()  // the tests' cluster: fsync off
        let directory = NSTemporaryDirectory() + "baton-pg-durability-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, out, err) = try await offPool {
            try runBaton(["serve", "--db", uri, "--key-file", directory + "/k", "--new-key", "--listen", "127.0.0.1:0"])
        }
        #expect(status == 1 && out.isEmpty)
        #expect(err.hasPrefix("Error: PostgreSQL runs with fsync = off: a power cut can lose or tear commits it acknowledged"), "\(err)")
        #expect(err.contains("--unsafe-postgres-durability"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/k"), "a refused start leaves the key it made behind")
        // Refused before anything was written: no schema, no recorded key fingerprint (which
        // would refuse the next start's new key).
        let list = try await offPool { try runBaton(["admin", "user", "list", "--db", uri]) }
        #expect(list.0 == 1 && list.2.contains("has no Baton tables"), "\(list.2)")
        // Declared a throwaway, it starts, and says what it accepted.
        let server = try await offPool { try ServerProcess(["--key-file", directory + "/k2", "--new-key"], database: uri) }
        defer { server.stop() }
        #expect(server.stderr.contains("Warning: started with --unsafe-postgres-durability: PostgreSQL runs with fsync = off"), "\(server.stderr)")
        #expect(try await offPool { try server.request("GET", "/readyz").status } == 200)
    }

    @Test func aWeakSynchronousCommitIsRaisedOnBatonsConnections() async throws {
        let cluster = try await PostgresCluster.start(.init(fsync: true))
        try await offPool {
            try cluster.primary.query("ALTER SYSTEM SET synchronous_commit = off", database: "postgres")
            try cluster.primary.query("SELECT pg_reload_conf()", database: "postgres")
            let directory = NSTemporaryDirectory() + "baton-pg-durability-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try ServerProcess(["--key-file", directory + "/k", "--new-key"], database: cluster.uri())
            defer { server.stop() }
            #expect(server.stderr.contains("Note: PostgreSQL's synchronous_commit is off; Baton's connections use on, so that every commit it acknowledges was flushed."),
                    "\(server.stderr)")
            #expect(!server.stderr.contains("durability"), "\(server.stderr)")
            try server.addUser("alice")
            let token = try #require(try server.login()["token"] as? String)
            #expect(try server.request("POST", "/v1/exchange", token: token).status == 200)
        }
    }
}

import BatonTestSupport
import Foundation
import Glibc
import Testing

/// `baton admin migrate --to postgresql://…`: a live SQLite deployment moves to PostgreSQL and
/// its tokens keep working there.
@Suite(.serialized)
struct MigrateCommandTests {
    @Test func aSQLiteDeploymentMovesAndItsTokensKeepWorking() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        try await offPool {
            // Before: users, a live chain with lineage, a revoked chain, audit.
            let sqlite = try ServerProcess()
            try sqlite.addUser("alice")
            try sqlite.addUser("bob")
            let token0 = try #require(try sqlite.login()["token"] as? String)
            let token1 = try #require(try sqlite.request("POST", "/v1/exchange", token: token0).json["token"] as? String)
            let laptop = try #require(try sqlite.login(device: "laptop")["token"] as? String)
            #expect(try sqlite.request("POST", "/v1/logout", token: laptop).status == 204)
            let bobs = try #require(try sqlite.login("bob")["token"] as? String)
            // An identity provider and a linked identity (schema version 11) go along too.
            #expect(try runBaton(["admin", "issuer", "add", "bank", "--issuer", "https://login.bank.test", "--client-id", "app",
                                  "--db", sqlite.databasePath]).0 == 0)
            #expect(try runBaton(["admin", "identity", "link", "bob", "--issuer", "bank", "--subject", "customer-2",
                                  "--db", sqlite.databasePath]).0 == 0)
            #expect(sqlite.stop() == 0)

            let migrate = ["admin", "migrate", "--to", uri, "--db", sqlite.databasePath]
            let (status, out, err) = try runBaton(migrate)
            #expect(status == 0, "\(err)")
            #expect(out.hasPrefix("Copied 2 users, 3 chains, 1 lineage rows and "), "\(out)")
            #expect(out.contains("audit events from \(sqlite.databasePath) to \(uri); counts checked.\n"))
            // Each chain's last use (schema version 9) goes along: "your devices" shows the same.
            let lastUse = "SELECT id, last_used_at, last_used_ip, last_used_user_agent FROM chains ORDER BY id"
            let copied = try queryDatabase(lastUse, at: uri)
            #expect(copied == (try queryDatabase(lastUse, at: sqlite.databasePath)) && copied.count == 3 && !copied.contains { $0[1].isEmpty })
            // Never twice into a database that has rows.
            let (again, _, refusal) = try runBaton(migrate)
            #expect(again == 1)
            #expect(refusal.hasPrefix("Error: PostgreSQL database \(uri) is not empty (2 users, 3 chains, "), "\(refusal)")

            // After: a server on PostgreSQL with the SQLite database's key.
            let postgres = try ServerProcess(["--key-file", sqlite.databasePath + ".key"], database: uri)
            defer { postgres.stop() }
            #expect(try postgres.request("GET", "/v1/verify", token: token1).json["username"] as? String == "alice")
            #expect(try postgres.request("GET", "/v1/verify", token: bobs).json["username"] as? String == "bob")
            #expect(try postgres.request("GET", "/v1/verify", token: laptop).error == "chain_revoked")
            let token2 = try postgres.request("POST", "/v1/exchange", token: token1)
            #expect(token2.status == 200 && token2.json["generation"] as? Int == 2)
            // The token consumed before the move is still caught as reuse, and revokes its chain.
            #expect(try postgres.request("POST", "/v1/exchange", token: token0, headers: [("X-Device-Id", "thief")]).error == "token_reused")
            #expect(try postgres.request("GET", "/v1/verify", token: try #require(token2.json["token"] as? String)).error == "chain_revoked")
            let links = try runBaton(["admin", "identity", "list", "--db", uri]).1
            #expect(links.contains("bob") && links.contains("customer-2"), "\(links)")
            #expect(try runBaton(["admin", "issuer", "list", "--db", uri]).1.contains("https://login.bank.test"))
            // New rows continue after the copied ids.
            let (added, addedOut, _) = try runBaton(["admin", "user", "add", "carol", "--password-stdin", "--db", uri], stdin: "correct horse battery\n")
            #expect(added == 0 && addedOut == "Created user 'carol' (id 3).\n")
        }
    }

    @Test func migrateNeedsAPostgresTarget() throws {
        let (status, _, err) = try runBaton(["admin", "migrate", "--to", "/tmp/other.db"])
        #expect(status == 64)
        #expect(err.hasPrefix("Error: Invalid value '/tmp/other.db' for '--to <uri>': expected a postgresql:// or postgres:// URI.\n"))
    }
}

import Foundation
import Glibc
import Testing

/// Security events reach a real receiver process as Standard Webhooks deliveries, verified by
/// the `standardwebhooks` package from PyPI: written to the outbox by the transaction that made
/// the change, retried while the receiver is down or failing (each event on its own schedule,
/// so not in commit order: issue 28, finding 2), each webhook-id delivered (answered 200) once.
@Suite(.serialized) struct WebhookTests {
    /// A `whsec_` secret in a file of mode 0600 in `directory`.
    static func secretFile(in directory: String) throws -> String {
        let (status, secret, _) = try runBaton(["admin", "webhooks", "new-secret"])
        #expect(status == 0)
        let path = directory + "/webhook.secret"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    /// A new directory for one test (the caller removes it) holding a `whsec_` secret file.
    static func scratch() throws -> (directory: String, secret: String) {
        let directory = NSTemporaryDirectory() + "baton-webhooks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return (directory, try secretFile(in: directory))
    }

    /// The events of the scenario below, in the order their changes committed.
    static let expectedTypes = [
        "login.new_device", "login.new_device", "token.reuse_detected", "chain.revoked",
        "user.disabled", "chain.revoked", "chain.revoked",
    ]

    /// Logins from two devices (one twice), a reuse, and the account disabled by the operator.
    static func makeEvents(_ server: ServerProcess) throws {
        let first = try server.login("alice", device: "phone", headers: [("User-Agent", "PhoneApp/1.0")])["token"] as! String
        _ = try server.login("alice", device: "phone")  // a device already seen: no event
        _ = try server.login("alice", device: "laptop")
        #expect(try server.request("POST", "/v1/exchange", token: first).status == 200)
        #expect(try server.request("POST", "/v1/exchange", token: first).error == "token_reused")
        let (status, _, err) = try runBaton(["admin", "user", "disable", "alice", "--db", server.databasePath])
        #expect(status == 0, "\(err)")
    }

    @Test(arguments: StoreBackend.allCases)
    func receiverDownThenFailingGetsEveryEventOnce(backend: StoreBackend) async throws {
        let (directory, secret) = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Bound but not listening: every connection is refused until the receiver starts.
        let reservation = try PortReservation()
        let url = "http://127.0.0.1:\(reservation.port)/hook"
        let server = try await ServerProcess.start(on: backend, ["--webhook", url, "--webhook-secret-file", secret, "--webhook-backoff", "50ms", "--webhook-max-backoff", "1s"])
        let problems = try await offPool { () throws -> [String] in
            try server.addUser("alice")
            try Self.makeEvents(server)
            var problems: [String] = []
            // The receiver is down: the deliverer records the failure and keeps the events.
            let deadline = Date().addingTimeInterval(30)
            var status = ""
            while Date() < deadline {
                status = try runBaton(["admin", "webhooks", "--db", server.databasePath]).1
                if status.contains("HTTP") || status.lowercased().contains("connect") { break }
                usleep(50_000)  // polling the admin view for a condition, with a deadline
            }
            if !status.contains(url) || !status.contains("7") { problems.append("while down, admin webhooks shows:\n\(status)") }
            // The backlog's age, which the webhook alert watches (deploy/prometheus/baton-rules.yml).
            let down = try server.request("GET", "/metrics").text
            let age = down.split(separator: "\n").first { $0.hasPrefix(#"baton_webhook_oldest_pending_seconds{endpoint="\#(url)"} "#) }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
            if !((age ?? 0) > 0) { problems.append("while down, the oldest pending event's age is \(String(describing: age))") }
            reservation.release()
            let receiver = try WebhookReceiver(port: reservation.port, secretFile: secret, logPath: directory + "/received.log", failFirst: 2)
            let received = receiver.await { deliveries in Set(deliveries.filter { $0.status == 200 }.map(\.id)).count >= Self.expectedTypes.count }
            // Dedup by webhook-id, keeping the accepted deliveries in arrival order.
            let accepted = received.filter { $0.status == 200 }
            if received.contains(where: { !$0.verified }) { problems.append("a delivery failed verification: \(received.filter { !$0.verified })") }
            if received.prefix(2).map(\.status) != [500, 500] { problems.append("first answers: \(received.prefix(2).map(\.status))") }
            // Each refused event is retried with its webhook-id (the two lanes may each have had one).
            if !Set(received.prefix(2).map(\.id)).isSubset(of: accepted.map(\.id)) {
                problems.append("a failed event was not retried with the same webhook-id")
            }
            if accepted.map(\.type).sorted() != Self.expectedTypes.sorted() { problems.append("accepted types \(accepted.map(\.type))") }
            if Set(accepted.map(\.id)).count != accepted.count { problems.append("an event was accepted twice: \(accepted.map(\.id))") }
            let first = accepted.first { $0.type == "login.new_device" && $0.data["device_id"] == "phone" }?.data ?? [:]
            if first["username"] != "alice" || first["device_id"] != "phone" || first["client_address"] != "127.0.0.1"
                || first["user_agent"] != "PhoneApp/1.0" || first["chain_id"]?.count != 16 {
                problems.append("login.new_device data \(first)")
            }
            let reasons = accepted.filter { $0.type == "chain.revoked" }.map { "\($0.data["reason"] ?? "") \($0.data["actor"] ?? "")" }
            if reasons.sorted() != ["reuse_detected baton", "user_disabled operator", "user_disabled operator"] { problems.append("revocations \(reasons)") }
            let log = (try? String(contentsOfFile: receiver.logPath, encoding: .utf8)) ?? ""
            if log.contains("bt1_") { problems.append("a payload carries a token") }
            // The admin view and /metrics agree. The receiver logs a delivery before it answers,
            // and the deliverer records it only after the answer: the last one's commit may
            // still be on its way.
            var after = ""
            let recorded = eventually(within: 10) {
                after = (try? runBaton(["admin", "webhooks", "--db", server.databasePath]).1) ?? ""
                let row = after.split(separator: "\n").last.map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) } ?? []
                return row.count >= 5 && row[1] == "7" && row[2] == "0" && row[3] == "0"
            }
            if !recorded { problems.append("admin webhooks after delivery:\n\(after)") }
            let metrics = try server.request("GET", "/metrics").text
            if !metrics.contains(#"baton_webhook_deliveries_total{endpoint="\#(url)",outcome="delivered"} 7"#)
                || !metrics.contains(#"baton_webhook_pending_events{endpoint="\#(url)"} 0"#)
                || !metrics.contains(#"baton_webhook_oldest_pending_seconds{endpoint="\#(url)"} 0.0"#) {
                problems.append("metrics:\n\(metrics.split(separator: "\n").filter { $0.contains("webhook") }.joined(separator: "\n"))")
            }
            receiver.stop()
            return problems
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// Two instances on one PostgreSQL database deliver to one endpoint: the claim's row lock
    /// (`FOR UPDATE SKIP LOCKED` on the pending event) and lease put each event in flight on one
    /// instance at a time, so a healthy receiver gets each webhook-id once (the instances send
    /// in parallel, so not in commit order).
    @Test func twoPostgresInstancesDeliverEachEventOnce() async throws {
        let (directory, secret) = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try WebhookReceiver(secretFile: secret, logPath: directory + "/received.log")
        let arguments = ["--webhook", receiver.url, "--webhook-secret-file", secret, "--webhook-backoff", "50ms", "--webhook-max-backoff", "1s"]
        let first = try await ServerProcess.start(on: .postgresql, arguments)
        let problems = try await offPool { () throws -> [String] in
            let second = try ServerProcess(["--key-file", first.directory + "/baton.key"] + arguments, database: first.databasePath)
            try first.addUser("alice")
            // 40 new devices through alternating instances, then the operator disables alice.
            for index in 0..<40 {
                _ = try (index % 2 == 0 ? first : second).login("alice", device: "device-\(index)")
            }
            #expect(try runBaton(["admin", "user", "disable", "alice", "--db", first.databasePath]).0 == 0)
            // 40 logins with a 10-chain limit evict 30 chains, then 10 are revoked by the disable.
            let expected = 40 + 30 + 1 + 10
            let received = receiver.await { Set($0.map(\.id)).count >= expected }
            var problems: [String] = []
            if received.count != expected { problems.append("\(received.count) deliveries for \(expected) events") }
            if Set(received.map(\.id)).count != received.count { problems.append("an event was delivered twice") }
            if received.contains(where: { !$0.verified || $0.status != 200 }) { problems.append("an unverified or refused delivery") }
            let devices = received.filter { $0.type == "login.new_device" }.map { $0.data["device_id"] ?? "" }
            if devices.sorted() != (0..<40).map({ "device-\($0)" }).sorted() { problems.append("new devices: \(devices)") }
            if received.last(where: { $0.type == "user.disabled" }) == nil { problems.append("no user.disabled") }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        receiver.stop()
    }

    /// A version-4 PostgreSQL database (the schema before webhooks, Tests/Fixtures) is migrated
    /// by the first command that opens it: the version-4 tables, and its devices already known.
    @Test func version4PostgresDatabaseGetsTheWebhookTables() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let result = try await offPool { () throws -> [String] in
            let stats = try migrateOlderPostgres(version: 4, uri: uri)
            let psql = try PostgresBinaries.find()
            return [stats, try psql.psql("SELECT version FROM baton_schema", uri: uri),
                    try psql.psql("SELECT user_id || '|' || device_id || '|' || first_seen FROM known_devices", uri: uri),
                    try psql.psql("SELECT count(*) FROM webhook_outbox", uri: uri) + " " + psql.psql("SELECT count(*) FROM webhook_endpoints", uri: uri)]
        }
        #expect(result == ["0", "12", "1|phone-1|5", "0 0"])
    }
}

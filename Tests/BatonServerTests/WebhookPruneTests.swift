import Foundation
import Glibc
import Testing

/// Outbox housekeeping through `baton admin prune`: events past the retention that every
/// endpoint is done with go; an event an endpoint has not reached stays whatever its age,
/// until that endpoint is forgotten (`baton admin webhooks forget`); delivery goes on after.
@Suite(.serialized) struct WebhookPruneTests {
    @Test(arguments: StoreBackend.allCases)
    func pruneDeletesOnlyEventsEveryEndpointIsDoneWith(_ backend: StoreBackend) async throws {
        let (directory, secret) = try WebhookTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let receiver = try WebhookReceiver(secretFile: secret, logPath: directory + "/received.log")
        defer { receiver.stop() }
        // Bound, never listening: every delivery there is refused, so its events stay pending.
        let down = try PortReservation()
        let live = receiver.url, dead = "http://127.0.0.1:\(down.port)/hook"
        let server = try await ServerProcess.start(on: backend, ["--webhook", live, "--webhook-secret-file", secret, "--webhook", dead, "--webhook-secret-file", secret,
                                                                 "--webhook-backoff", "50ms", "--webhook-max-backoff", "200ms"])
        let problems = try await offPool { () throws -> [String] in
            var problems: [String] = []
            let db = ["--db", server.databasePath]
            let outboxCount = { () throws -> String in try queryDatabase("SELECT count(*) FROM webhook_outbox", at: server.databasePath).first?.first ?? "?" }
            try server.addUser("alice")
            for device in ["phone", "laptop", "tablet"] { _ = try server.login("alice", device: device) }
            if receiver.await({ $0.filter { $0.status == 200 }.count >= 3 }).count != 3 { problems.append("the live endpoint did not get the 3 events") }

            // Recent events stay under a retention; past it, the dead endpoint still needs them.
            let recent = try runBaton(["admin", "prune", "--older-than", "1h"] + db)
            if recent.0 != 0 || recent.1.contains("webhook") { problems.append("prune --older-than 1h: \(recent)") }
            let held = try runBaton(["admin", "prune", "--older-than", "0"] + db)
            let heldLeft = try outboxCount()
            if held.0 != 0 || held.1.contains("webhook") || heldLeft != "3" { problems.append("prune with a pending endpoint: \(held), \(heldLeft) left") }
            let status = try runBaton(["admin", "webhooks"] + db).1
            let deadRow = status.split(separator: "\n").first { $0.hasPrefix(dead) }.map { $0.split(separator: " ").map(String.init) } ?? []
            if deadRow.count < 4 || deadRow[3] != "3" { problems.append("admin webhooks does not show the dead endpoint's 3 pending:\n\(status)") }

            // Forgotten, the dead endpoint no longer holds them back (the running server starts
            // it again at the end of the outbox).
            let forgot = try runBaton(["admin", "webhooks", "forget", "--endpoint", dead] + db)
            if forgot.0 != 0 || forgot.1 != "Forgot webhook endpoint \(dead).\n" { problems.append("forget: \(forgot)") }
            let unknown = try runBaton(["admin", "webhooks", "forget", "--endpoint", "http://127.0.0.1:1/nowhere"] + db)
            if unknown.0 == 0 || !unknown.2.contains("no webhook endpoint http://127.0.0.1:1/nowhere") { problems.append("forget of an unknown endpoint: \(unknown)") }
            let dryRun = try runBaton(["admin", "prune", "--older-than", "0", "--dry-run"] + db)
            let dryRunLeft = try outboxCount()
            if dryRun.0 != 0 || !dryRun.1.contains("\nWould prune 3 webhook events from before ") || dryRunLeft != "3" {
                problems.append("prune --dry-run: \(dryRun), \(dryRunLeft) left")
            }
            let pruned = try runBaton(["admin", "prune", "--older-than", "0"] + db)
            let prunedLeft = try outboxCount()
            if pruned.0 != 0 || !pruned.1.contains("\nPruned 3 webhook events from before ") || prunedLeft != "0" {
                problems.append("prune: \(pruned), \(prunedLeft) left")
            }

            // Delivery goes on after a prune: the next event reaches the live endpoint, in order.
            #expect(try server.request("POST", "/v1/logout", token: try server.login("alice", device: "phone")["token"] as? String).status == 204)
            let received = receiver.await { $0.filter { $0.status == 200 }.count >= 4 }.filter { $0.status == 200 }
            if received.map(\.type) != ["login.new_device", "login.new_device", "login.new_device", "chain.revoked"] {
                problems.append("after the prune the receiver got \(received.map(\.type))")
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        down.release()
    }
}

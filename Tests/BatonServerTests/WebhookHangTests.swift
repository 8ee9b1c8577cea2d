import Foundation
import Glibc
import Testing

/// A receiver that takes the request and never answers: `baton serve` stops on SIGTERM without
/// waiting out the attempt's deadline (libcurl's progress function sees the stop), records the
/// cut attempt as failed, and the event is delivered, same webhook-id, once a receiver answers.
@Suite(.serialized) struct WebhookHangTests {
    @Test func stoppingCutsAnAttemptTheReceiverNeverAnswers() async throws {
        let (directory, secret) = try WebhookTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hanging = try WebhookReceiver(secretFile: secret, logPath: directory + "/hung.log", hang: true)
        // A deadline far longer than the test's own waits: a stop that waited it out would fail them.
        let server = try await ServerProcess.start(on: .sqlite, ["--webhook", hanging.url, "--webhook-secret-file", secret,
                                                                 "--webhook-timeout", "10m", "--webhook-backoff", "50ms"])
        let problems = try await offPool { () throws -> [String] in
            var problems: [String] = []
            try server.addUser("alice")
            _ = try server.login("alice", device: "phone")
            let hung = hanging.await(seconds: 30) { !$0.isEmpty }
            guard hung.count == 1, hung[0].status == 0, hung[0].type == "login.new_device" else { return ["the receiver did not get the attempt: \(hung)"] }

            // SIGTERM in a child thread; the stop must come well before the 10-minute deadline.
            let stopped = DispatchSemaphore(value: 0)
            let exitStatus = ExitStatus()
            Thread {
                exitStatus.value = server.stop()
                stopped.signal()
            }.start()
            guard stopped.wait(timeout: .now() + 30) == .success else { return ["baton serve did not stop within 30 s of SIGTERM: it waited on the hung attempt"] }
            if exitStatus.value != 0 { problems.append("exit status \(exitStatus.value)") }
            let view = try runBaton(["admin", "webhooks", "--db", server.databasePath]).1
            if !view.contains("stopped before an answer") { problems.append("the cut attempt is not recorded as failed:\n\(view)") }

            // A receiver that answers, on the same URL: the event arrives with the same webhook-id.
            hanging.stop()
            let answering = try WebhookReceiver(port: hanging.port, secretFile: secret, logPath: directory + "/answered.log")
            defer { answering.stop() }
            let restarted = try server.restarted()
            defer { restarted.stop() }
            let delivered = answering.await { $0.contains { $0.status == 200 } }
            if delivered.filter({ $0.status == 200 }).map(\.id) != [hung[0].id] { problems.append("after the restart: \(delivered.map { "\($0.id) \($0.status)" }), expected \(hung[0].id)") }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}

/// The stopping thread's result, read after its semaphore is signalled.
private final class ExitStatus: @unchecked Sendable {
    var value: Int32 = -1
}

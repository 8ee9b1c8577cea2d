import Foundation
import Testing

/// HTTPS deliveries verify the receiver's certificate (libcurl's default, which the sender
/// keeps): a receiver with a self-signed certificate gets nothing, and the endpoint's last
/// error names the certificate.
@Suite struct WebhookTLSTests {
    @Test func selfSignedReceiverIsRefused() async throws {
        let (directory, secret) = try WebhookTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1",
                                                      "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem"])
        #expect(made.status == 0, "\(made.stderr)")
        let receiver = try WebhookReceiver(secretFile: secret, logPath: directory + "/received.log", tls: (directory + "/cert.pem", directory + "/key.pem"))
        defer { receiver.stop() }
        #expect(receiver.url.hasPrefix("https://"))
        let server = try await ServerProcess.start(on: .sqlite, ["--webhook", receiver.url, "--webhook-secret-file", secret, "--webhook-backoff", "50ms"])
        let view = try await offPool { () throws -> String in
            try server.addUser("alice")
            _ = try server.login("alice", device: "phone")
            var view = ""
            _ = eventually(within: 30) {
                view = (try? runBaton(["admin", "webhooks", "--db", server.databasePath]).1) ?? ""
                return view.lowercased().contains("certificate")
            }
            return view
        }
        #expect(view.lowercased().contains("certificate"), "\(view)")
        #expect(receiver.deliveries.isEmpty, "a delivery got through to a receiver with an untrusted certificate")
    }
}

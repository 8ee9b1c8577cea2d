import Foundation
import Testing

/// HTTPS deliveries verify the receiver's certificate (libcurl's default, which the sender
/// keeps): a receiver with a self-signed certificate gets nothing, and the endpoint's last
/// error names the certificate; one whose certificate a CA given with `--webhook-ca-file`
/// signed gets every event, verified.
@Suite struct WebhookTLSTests {
    /// A receiver on HTTPS whose certificate (for 127.0.0.1) is signed by a private CA, made
    /// with openssl in `directory`: its CA's PEM path.
    static func receiverWithPrivateCA(_ directory: String, secret: String) throws -> (WebhookReceiver, ca: String) {
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=Baton test CA", "-days", "1",
             "-keyout", directory + "/ca-key.pem", "-out", directory + "/ca.pem"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", directory + "/key.pem", "-out", directory + "/req.pem"],
            ["x509", "-req", "-in", directory + "/req.pem", "-CA", directory + "/ca.pem", "-CAkey", directory + "/ca-key.pem",
             "-CAcreateserial", "-days", "1", "-extfile", directory + "/san.cnf", "-out", directory + "/cert.pem"],
        ]
        try "subjectAltName = IP:127.0.0.1\n".write(toFile: directory + "/san.cnf", atomically: true, encoding: .utf8)
        for step in steps {
            let made = try runCommand("/usr/bin/openssl", step)
            guard made.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: made.stderr]) }
        }
        let receiver = try WebhookReceiver(secretFile: secret, logPath: directory + "/received.log", tls: (directory + "/cert.pem", directory + "/key.pem"))
        return (receiver, directory + "/ca.pem")
    }

    @Test func receiverSignedByTheGivenCAGetsEveryEvent() async throws {
        let (directory, secret) = try WebhookTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (receiver, ca) = try Self.receiverWithPrivateCA(directory, secret: secret)
        defer { receiver.stop() }
        let server = try await ServerProcess.start(on: .sqlite, ["--webhook", receiver.url, "--webhook-secret-file", secret,
                                                                 "--webhook-backoff", "50ms", "--webhook-ca-file", ca])
        let received = try await offPool { () throws -> [WebhookReceiver.Delivery] in
            try server.addUser("alice")
            _ = try server.login("alice", device: "phone")
            return receiver.await(seconds: 30) { $0.contains { $0.type == "login.new_device" } }
        }
        #expect(receiver.url.hasPrefix("https://"))
        #expect(received.contains { $0.type == "login.new_device" && $0.verified && $0.status == 200 }, "\(received)")
    }

    @Test func unreadableCAFileIsAUsageErrorNamingTheFlag() throws {
        let (status, _, err) = try runBaton(["serve", "--db", "/nonexistent/baton.db", "--webhook-ca-file", "/nonexistent/ca.pem"])
        #expect(status != 0)
        #expect(err.contains("--webhook-ca-file") && err.contains("/nonexistent/ca.pem"), "\(err)")
    }

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

import Foundation
import Glibc
import Testing

/// Issue 32 §1: a webhook signing secret is rotated without a gap. During the overlap the
/// secret file holds the new secret and the old one, and every delivery carries one `v1,`
/// signature per secret in its `webhook-signature` header (Standard Webhooks allows several,
/// space-separated). Receivers running the PyPI `standardwebhooks` library verify each event
/// with the old secret alone and with the new secret alone; one with an unrelated secret
/// verifies none (the signatures are real).
@Suite(.serialized) struct WebhookSecretRotationTests {
    /// A new `whsec_` secret in `directory/name`, mode 0600; its text.
    static func secret(_ name: String, in directory: String) throws -> (path: String, text: String) {
        let (status, text, _) = try runBaton(["admin", "webhooks", "new-secret"])
        #expect(status == 0)
        let path = directory + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        return (path, text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func duringTheOverlapEveryEventVerifiesWithTheOldSecretAndWithTheNewOne() async throws {
        let directory = NSTemporaryDirectory() + "baton-webhook-rotation-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let old = try Self.secret("old.secret", in: directory)
        let new = try Self.secret("new.secret", in: directory)
        let unrelated = try Self.secret("unrelated.secret", in: directory)
        // As docs/webhooks.md has the operator write it: the new secret, then the old one.
        let overlap = directory + "/webhook.secret"
        #expect(FileManager.default.createFile(atPath: overlap, contents: Data("\(new.text)\n\(old.text)\n".utf8), attributes: [.posixPermissions: 0o600]))

        let receivers = try [old.path, new.path, unrelated.path].enumerated().map { index, secret in
            try WebhookReceiver(secretFile: secret, logPath: directory + "/received-\(index).log")
        }
        defer { for receiver in receivers { receiver.stop() } }
        let server = try ServerProcess(["--access-log", "off"] + receivers.flatMap {
            ["--webhook", "http://127.0.0.1:\($0.port)/hook", "--webhook-secret-file", overlap]
        })
        try await offPool {
            try server.addUser("alice")
            _ = try server.login("alice", device: "phone")
            _ = try server.login("alice", device: "laptop")
            for (index, receiver) in receivers.prefix(2).enumerated() {
                let received = receiver.await { $0.filter { $0.verified && $0.type == "login.new_device" }.count >= 2 }
                #expect(received.filter { $0.verified }.count >= 2, "receiver \(index): \(received)")
                #expect(received.allSatisfy { $0.verified }, "receiver \(index): \(received)")
            }
            let refused = receivers[2].await { $0.count >= 2 }
            #expect(refused.count >= 2 && refused.allSatisfy { !$0.verified }, "\(refused)")
        }
    }

    @Test func aSecretFileWithAMalformedSecondSecretRefusesTheStart() throws {
        let directory = NSTemporaryDirectory() + "baton-webhook-rotation-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = try Self.secret("good.secret", in: directory)
        let file = directory + "/webhook.secret"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("\(good.text)\nwhsec_short\n".utf8), attributes: [.posixPermissions: 0o600]))
        let (status, _, err) = try runBaton(["serve", "--db", directory + "/baton.db", "--listen", "127.0.0.1:0",
                                             "--webhook", "http://127.0.0.1:9/hook", "--webhook-secret-file", file])
        #expect(status == 1)
        #expect(err.contains("webhook secret file \(file) must hold whsec_ followed by base64 (at least 24 bytes of secret), or two such secrets on separate lines during a rotation"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/baton.db"))
    }
}

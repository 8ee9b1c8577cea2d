import BatonTestSupport
import Foundation
import Glibc
import Testing

/// `baton admin key list/rotate/retire` as docs/admin.md shows them ("Rotating the token key"):
/// the worked example's commands run on a real server's database, and each answer has the
/// documented shape (fingerprints, times, ages and counts aside), the refusal included.
@Suite(.serialized) struct KeyCommandTests {
    /// The documented line with what varies from run to run replaced: fingerprints, times, ages, numbers.
    static func shape(_ line: some StringProtocol) -> String {
        var text = String(line)
        for (pattern, replacement) in [("[0-9a-f]{16}", "F"), ("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z", "T"),
                                       ("\\b[0-9]+[dhm]( [0-9]+[hms])?\\b|\\b[0-9]+s\\b", "A"), ("[0-9]+", "N"), (" +", " ")] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }

    @Test func theWorkedExampleRunsAsDocumented() async throws {
        let block = try DocumentedBlock.named("key-rotation", in: "docs/admin.md")
        let server = try ServerProcess(["--access-log", "off"])
        try server.addUser("alice")
        // Three chains on key 0; one moves to key 1 between the two lists, two stay (plural counts, as documented).
        let tokens = try (1...3).map { try server.login(device: "phone-\($0)")["token"] as! String }
        // The writing commands carry docs/deploy.md's service-user prefix (run as the service's
        // user: scripts/check-systemd runs them so under systemd); here the command after it runs.
        let servicePrefix = try Self.serviceUserPrefix()
        var steps: [(command: String, expected: [String])] = []
        var prefixed: [Bool] = []
        for line in block.split(separator: "\n") {
            if line.hasPrefix("$ ") {
                var command = String(line.dropFirst(2))
                prefixed.append(command.hasPrefix(servicePrefix + " "))
                if prefixed.last! { command = String(command.dropFirst(servicePrefix.count + 1)) }
                steps.append((command, []))
            } else { steps[steps.count - 1].expected.append(String(line)) }
        }
        #expect(prefixed == steps.map { !$0.command.hasPrefix("baton admin key list") },
                "every writing command (rotate, retire) runs with the prefix of docs/deploy.md's first-user block, and only those")
        #expect(steps.map { $0.command.split(separator: " ").prefix(4).joined(separator: " ") }
                == ["baton admin key list", "baton admin key rotate", "baton admin key retire", "baton admin key list", "baton admin key retire"])
        var rotatedAt = Date()
        for (index, step) in steps.enumerated() {
            if index == 3 {
                // The server reads the ring again within 2 s of the rotation: exchange until it mints with key 1.
                var token = tokens[0]
                let deadline = Date().addingTimeInterval(30)  // generous: the CI machine is slow and noisy
                while !token.hasPrefix("bt2_") && Date() < deadline {
                    let moved = try server.request("POST", "/v1/exchange", token: token)
                    #expect(moved.status == 200, "\(moved.text)")
                    token = moved.json["token"] as? String ?? token
                    // A blocking pause, like the requests around it: a Task.sleep needs a free
                    // thread of Swift's cooperative pool to resume, and the blocking suites beside
                    // this one hold them (in CI one such pause took 30 s: one exchange in 30 s).
                    if !token.hasPrefix("bt2_") { usleep(100_000) }
                }
                // On failure, the server's own view: the minting key's age says which key it holds.
                let age = try server.request("GET", "/metrics").text.split(separator: "\n").filter { $0.hasPrefix("baton_token_key_age_seconds ") }
                #expect(token.hasPrefix("bt2_"), "the server still mints with key 0 (\(age)) after the rotation")
            }
            if index == 4 {  // the forced retire waits out the 5 s after the rotation
                let wait = rotatedAt.addingTimeInterval(5.5).timeIntervalSinceNow
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
            let arguments = step.command.split(separator: " ").dropFirst().map {
                $0 == "/var/lib/baton/baton.db" ? server.databasePath : String($0)
            }
            let (status, out, err) = try runBaton(arguments)
            if index == 1 { rotatedAt = Date() }
            let shown = (out + err).split(separator: "\n").map(Self.shape)
            #expect(shown == step.expected.map(Self.shape), "\(step.command): \(out)\(err)")
            #expect(status == (step.expected.first?.hasPrefix("Error:") == true ? 1 : 0), "\(step.command)")
        }
        // The forced retire revoked the two chains still on key 0: their tokens are refused, as a
        // revoked chain's (key_retired) until the server reads the ring again, then as a retired key's.
        for token in tokens.dropFirst() {
            let answer = try server.request("GET", "/v1/verify", token: token)
            #expect(answer.status == 401 && (answer.error == "token_invalid" || answer.json["reason"] as? String == "key_retired"), "\(answer.text)")
        }
        let kinds = try runBaton(["admin", "audit", "--kind", "chain_revoked", "--format", "json", "--db", server.databasePath]).1
        #expect(kinds.split(separator: "\n").count == 2 && kinds.contains("\"reason\":\"key_retired\""), "\(kinds)")
    }

    /// The `systemd-run … -p UMask=0077` prefix of docs/deploy.md's first-user block, on one line.
    static func serviceUserPrefix() throws -> String {
        let block = try DocumentedBlock.named("first-user", in: "docs/deploy.md")
        let joined = block.replacingOccurrences(of: "\\\\\n *", with: " ", options: .regularExpression)
        guard let line = joined.split(separator: "\n").first(where: { $0.hasPrefix("systemd-run ") }),
              let end = line.range(of: " baton admin ") else { throw DocumentedBlock.NotFound(description: "docs/deploy.md's first-user block has no systemd-run … baton admin line") }
        return String(line[..<end.lowerBound]).replacingOccurrences(of: " +", with: " ", options: .regularExpression)
    }

    @Test func everyKeyCommandNeedsTheKeyFileOnPostgreSQL() throws {
        for command in [["key", "list"], ["key", "rotate"], ["key", "retire", "1"]] {
            let (status, out, err) = try runBaton(["admin"] + command + ["--db", "postgresql://baton@127.0.0.1:1/baton"])
            #expect(status == 64 && out.isEmpty, "\(command)")
            #expect(err.hasPrefix("Error: --key-file (or BATON_KEY_FILE) is required when --db is a PostgreSQL URI: the key file every instance reads.\nUsage: baton admin \(command.prefix(2).joined(separator: " ")) "),
                    "\(err)")
        }
    }

    @Test func aKeyFileOtherThanTheDatabasesIsRefusedByEveryKeyCommand() throws {
        let server = try ServerProcess(["--access-log", "off"])
        try server.addUser("alice")
        let other = server.directory + "/other.key"
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() + "\n"
        #expect(FileManager.default.createFile(atPath: other, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]))
        let (status, out, err) = try runBaton(["admin", "key", "rotate", "--db", server.databasePath, "--key-file", other])
        #expect(status == 1 && out.isEmpty)
        #expect(err.hasPrefix("Error: key file \(other) does not match database \(server.databasePath)"), "\(err)")
        #expect(try queryDatabase("SELECT count(*) FROM token_keys", at: server.databasePath) == [["0"]])
    }
}

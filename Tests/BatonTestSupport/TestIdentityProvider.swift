import Foundation
import Glibc

/// A Python identity provider as a child process, on loopback over HTTPS with a throwaway CA:
/// scripts/test_idp.py (our own: discovery, JWKS, rotation, every malformed token on demand)
/// or scripts/oidc_mock_idp.py (the PyPI `oidc-provider-mock`, an implementation we did not
/// write). Each prints one JSON line when it listens, and exits when its standard input closes,
/// so a test that fails leaves no process behind. The tests talk to it with curl (another
/// independent HTTPS client) or, for the mock, with JSON lines on its standard input.
package final class TestIdentityProvider: @unchecked Sendable {
    package let issuer: String
    package let caFile: String
    /// test_idp.py only: its JWKS over plain HTTP.
    package let plainJWKSURI: String?
    private let process = ChildProcess()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()

    /// Starts `script` (in scripts/) with `python`, its files in `directory`.
    package init(script: String, python: String, directory: String) throws {
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [repositoryRoot + "/scripts/" + script, "--dir", directory]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let ready = try Self.object(try Self.line(from: output.fileHandleForReading, buffer: &pending))
        guard let issuer = ready["issuer"] as? String, let caFile = ready["ca_file"] as? String else {
            throw ServerProcess.ServerError.didNotStart("\(script) did not print its issuer: \(ready)")
        }
        self.issuer = issuer
        self.caFile = caFile
        plainJWKSURI = ready["plain_jwks_uri"] as? String
    }

    deinit { stop() }

    /// Closes its standard input (it exits) and waits for it.
    package func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.waitUntilExit() }
    }

    /// POSTs `body` (JSON) to `path` on the provider (test_idp.py's /mint and /control).
    package func post(_ path: String, _ body: [String: Any]) throws -> [String: Any] {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let result = try runCommand("/usr/bin/curl", ["-sS", "--max-time", "30", "--cacert", caFile, "-H", "Content-Type: application/json",
                                                      "--data-binary", json, issuer + path])
        guard result.status == 0 else { throw ServerProcess.ServerError.didNotStart("curl \(path): \(result.stderr)") }
        return try Self.object(result.stdout)
    }

    /// test_idp.py: a token with exactly `claims`, signed as `alg` says (`none` and
    /// `HS256-public-key` included), under `kid` when given.
    package func mint(_ claims: [String: Any], alg: String = "RS256", kid: String? = nil) throws -> String {
        var body: [String: Any] = ["claims": claims, "alg": alg]
        if let kid { body["kid"] = kid }
        guard let token = try post("/mint", body)["token"] as? String else { throw ServerProcess.ServerError.didNotStart("mint gave no token") }
        return token
    }

    /// test_idp.py's `/control`.
    @discardableResult
    package func control(_ action: String, _ more: [String: Any] = [:]) throws -> [String: Any] {
        try post("/control", more.merging(["action": action]) { $1 })
    }

    /// oidc_mock_idp.py: one command on its standard input, its one-line answer.
    package func command(_ body: [String: Any]) throws -> [String: Any] {
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: body) + Data("\n".utf8))
        return try Self.object(try Self.line(from: output.fileHandleForReading, buffer: &pending))
    }

    private static func line(from handle: FileHandle, buffer: inout Data) throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            let chunk = handle.availableData
            guard !chunk.isEmpty else { throw ServerProcess.ServerError.didNotStart("the identity provider exited: \(String(decoding: buffer, as: UTF8.self))") }
            buffer.append(chunk)
        }
    }

    private static func object(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw ServerProcess.ServerError.didNotStart("not a JSON object: \(text)")
        }
        return object
    }
}

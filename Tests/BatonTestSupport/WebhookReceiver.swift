import Foundation
import Glibc

/// The Python webhook receiver (Tests/Fixtures/webhook_receiver.py) as a child process: it
/// verifies each delivery with the `standardwebhooks` package from PyPI (installed into
/// .venv-webhooks by scripts/webhook-receiver-venv) and logs one JSON line per request.
package final class WebhookReceiver: @unchecked Sendable {
    /// One request as the receiver logged it.
    package struct Delivery: Sendable, Equatable {
        package var verified: Bool
        package var status: Int
        package var id: String
        package var type: String
        /// The verified body's `data` object, as JSON text.
        package var data: [String: String]
    }

    package let port: UInt16
    package let logPath: String
    private let tls: Bool
    private let process = ChildProcess()

    /// The venv's interpreter, made on first use by scripts/webhook-receiver-venv.
    package static func python() throws -> String {
        let python = repositoryRoot + "/.venv-webhooks/bin/python"
        if access(python, X_OK) != 0 || (try? runCommand(python, ["-c", "import standardwebhooks"]).status) != 0 {
            let made = try runCommand(repositoryRoot + "/scripts/webhook-receiver-venv", [])
            guard made.status == 0 else { throw ServerProcess.ServerError.didNotStart("scripts/webhook-receiver-venv: \(made.stderr)") }
        }
        return python
    }

    /// Starts the receiver on `port` (listening once this returns). `failFirst`: answer 500 to
    /// that many verified deliveries first; `hang`: never answer; `refusing`: answer 403 to every
    /// delivery whose raw body contains this text (a web application firewall); `tls`: serve
    /// HTTPS with this certificate and key (PEM files).
    package init(port: UInt16, secretFile: String, logPath: String, failFirst: Int = 0, hang: Bool = false, refusing: String? = nil,
                 tls: (certificate: String, key: String)? = nil) throws {
        self.port = port
        self.logPath = logPath
        self.tls = tls != nil
        let ready = Pipe()
        process.executableURL = URL(fileURLWithPath: try Self.python())
        process.arguments = [repositoryRoot + "/Tests/Fixtures/webhook_receiver.py", "--port", String(port), "--secret-file", secretFile,
                             "--log", logPath, "--fail", String(failFirst)] + (hang ? ["--hang"] : []) + (refusing.map { ["--refuse", $0] } ?? [])
            + (tls.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key] } ?? [])
        process.standardOutput = ready
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The first line is printed once the socket listens.
        let line = ready.fileHandleForReading.availableData
        guard String(decoding: line, as: UTF8.self).hasPrefix("listening") else {
            stop()
            throw ServerProcess.ServerError.didNotStart("webhook receiver did not start")
        }
    }

    /// Starts the receiver on a free loopback port.
    package convenience init(secretFile: String, logPath: String, failFirst: Int = 0, hang: Bool = false, refusing: String? = nil,
                             tls: (certificate: String, key: String)? = nil) throws {
        let reservation = try PortReservation()
        reservation.release()
        try self.init(port: reservation.port, secretFile: secretFile, logPath: logPath, failFirst: failFirst, hang: hang,
                      refusing: refusing, tls: tls)
    }

    /// The URL that reaches the receiver (for `--webhook`).
    package var url: String { "\(tls ? "https" : "http")://127.0.0.1:\(port)/hook" }

    /// Every request logged so far, in order of arrival.
    package var deliveries: [Delivery] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let body = object["body"] as? [String: Any]
            let data = (body?["data"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
            return Delivery(verified: object["verified"] as? Bool ?? false, status: object["status"] as? Int ?? 0,
                            id: object["id"] as? String ?? "", type: object["type"] as? String ?? "", data: data)
        }
    }

    /// Waits (polling the log, with a deadline) until `condition` holds for the deliveries.
    @discardableResult
    package func await(seconds: Double = 60, _ condition: ([Delivery]) -> Bool) -> [Delivery] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let now = deliveries
            if condition(now) || Date() > deadline { return now }
            usleep(20_000)  // polling a file for a condition, with a deadline
        }
    }

    package func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

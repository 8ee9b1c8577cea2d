import Foundation

/// The sqlite3 command-line shell on a database, fed line by line, as an operator would use
/// it: a test opens a transaction in it and keeps it open while the server runs.
final class SQLiteShell {
    private let process = ChildProcess()
    private let input = Pipe()
    private let output = Pipe()
    private var received = Data()

    static let binary = ["/usr/bin/sqlite3", "/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    init(_ databasePath: String) throws {
        guard let binary = Self.binary else { throw ServerProcess.ServerError.didNotStart("sqlite3 is not installed (./scripts/test installs it)") }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [databasePath]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// Runs `sql` and waits (up to 10 s) until the shell has finished it; returns its output.
    @discardableResult
    func run(_ sql: String) throws -> String {
        let marker = "done-\(UUID().uuidString)"
        input.fileHandleForWriting.write(Data((sql + "\n.print \(marker)\n").utf8))
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let range = received.range(of: Data(marker.utf8)) {
                let text = String(decoding: received[..<range.lowerBound], as: UTF8.self)
                received.removeSubrange(..<range.upperBound)
                return text
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        throw ServerProcess.ServerError.didNotStart("sqlite3 did not finish: \(String(decoding: received, as: UTF8.self))")
    }
}

import Foundation

/// What a finished external command printed and how it exited.
package struct CommandOutput: Sendable, Equatable {
    package var status: Int32
    package var stdout: String
    package var stderr: String
}

/// Runs `executable` with `arguments` to completion (blocking: call it off the cooperative pool)
/// with standard input empty; returns its status and output. Both pipes are drained
/// concurrently so a chatty command cannot block on a full pipe.
package func runCommand(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandOutput {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ChildEnvironment.make(environment)
    let output = Pipe(), error = Pipe()
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let errorData = ErrorDrain(error.fileHandleForReading)
    let out = output.fileHandleForReading.readDataToEndOfFile()
    let err = errorData.wait()
    process.waitUntilExit()
    return CommandOutput(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

/// Reads a pipe to its end on a thread of its own.
private final class ErrorDrain: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}

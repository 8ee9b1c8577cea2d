import Foundation
import Glibc
import Testing

/// `ChildProcess`, the tests' posix_spawn wrapper: what a child gets and how its end is reported.
struct ChildProcessTests {
    /// Runs `/bin/sh -c script` with `input` on stdin; returns the finished child and its stdout.
    func shell(_ script: String, input: String = "", configure: (ChildProcess) -> Void = { _ in }) throws -> (ChildProcess, String) {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", script]
        let stdin = Pipe(), stdout = Pipe()
        child.standardInput = stdin
        child.standardOutput = stdout
        configure(child)
        try child.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        return (child, output)
    }

    @Test func reportsTheExitCodeAndWhatTheChildPrinted() throws {
        let (child, output) = try shell("read line; echo \"got $line\"; exit 3", input: "hello\n")
        #expect(output == "got hello\n")
        #expect(child.terminationReason == .exit && child.terminationStatus == 3)
        #expect(!child.isRunning)
    }

    @Test func reportsTheSignalThatEndedTheChild() throws {
        let (child, _) = try shell("kill -KILL $$")
        #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGKILL)
    }

    @Test func terminateStopsARunningChildAndLaterSignalsGoNowhere() throws {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["60"]
        try child.run()
        #expect(child.isRunning)
        child.terminate()
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGTERM)
        child.interrupt()  // reaped: nothing is sent (its PID may be another process's now)
        #expect(!child.isRunning)
    }

    @Test func givesTheChildOnlyItsStandardStreams() throws {
        let (_, output) = try shell("ls /proc/$$/fd")
        #expect(output.split(separator: "\n") == ["0", "1", "2"])
    }

    @Test func setsTheEnvironmentTheDirectoryAndDevNull() throws {
        let (_, output) = try shell("echo \"$ONLY $HOME\"; pwd; cat; ls -l /proc/$$/fd/2") {
            $0.environment = ["ONLY": "this"]
            $0.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
            $0.standardInput = FileHandle.nullDevice
            $0.standardError = FileHandle.nullDevice
        }
        let lines = output.split(separator: "\n")
        #expect(lines.prefix(2) == ["this ", "/tmp"])
        #expect(lines.last?.hasSuffix("-> /dev/null") == true)
    }

    @Test func startsTheChildWithNoSignalBlockedOrIgnoredInAGroupOfItsOwn() throws {
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let ignored = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, ignored) }
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/cat")
        child.arguments = ["/proc/self/stat", "/proc/self/status"]
        let stdout = Pipe()
        child.standardOutput = stdout
        try child.run()
        let output = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        func mask(_ name: String) -> UInt64? {
            output.split(separator: "\n").first { $0.hasPrefix(name + ":") }.flatMap { UInt64($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) }
        }
        #expect(mask("SigBlk") == 0, "\(output)")
        // Signals 1-31 at their defaults (glibc's posix_spawn leaves its own internal ones, 32 and 33, ignored).
        #expect(mask("SigIgn").map { $0 & 0x7fff_ffff } == 0, "\(output)")
        // /proc/self/stat: pid (comm) state ppid pgrp ...
        let stat = output.prefix { $0 != "\n" }.split(separator: ")").last?.split(separator: " ")
        #expect(stat.map { pid_t($0[2]) } == child.processIdentifier, "\(output)")
    }

    @Test func aMissingExecutableThrowsWithItsPathAndErrno() {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/nonexistent/tool")
        #expect(throws: ChildProcessError.spawnFailed(executable: "/nonexistent/tool", errno: ENOENT)) { try child.run() }
        #expect(!child.isRunning)
    }

    /// The test command's knobs, as README.md and docs/reliability.md document them.
    static let runnerKnobs = ["BATON_FUZZ_SECONDS": "0", "BATON_SOAK_SECONDS": "600", "BATON_SOAK_SEED": "7", "BATON_CRASH_KILLS": "200",
                              "BATON_CRASH_SEED": "7", "BATON_WEBHOOK_CRASH_KILLS": "10", "BATON_PRODUCTS": productsDirectory.path]

    @Test func theRunnersBatonVariablesStayOutOfChildrenButATestsOwnArePassed() {
        let environment = ChildEnvironment.make(inheriting: Self.runnerKnobs.merging(["PATH": "/usr/bin:/bin", "HOME": "/root"]) { $1 },
                                                ["BATON_TOKN_TTL": "5m"])
        #expect(environment == ["PATH": "/usr/bin:/bin", "HOME": "/root", "BATON_TOKN_TTL": "5m"])
    }

    /// `BATON_FUZZ_SECONDS=0 ./scripts/test` once failed KeyFileCheckTests and
    /// SilentFailureTests: the servers inherited the knob and warned about it on the standard
    /// error those tests compare exactly. The real binary, with every knob in the runner's
    /// environment: a warning when handed the knobs, none through the tests' launchers.
    @Test func aRunnerKnobDoesNotReachTheBinaryTheTestsStart() throws {
        let directory = try temporaryDirectory("baton-knobs-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = directory + "/data/baton.db"
        let refusal = "Error: directory \(directory)/data (of database \(missing)) does not exist: create it first (mkdir -p \(directory)/data), or check --db / BATON_DB\n"
        let inherited = ProcessInfo.processInfo.environment.merging(Self.runnerKnobs) { $1 }
        func serve(_ environment: [String: String]) throws -> (Int32, String) {
            let child = ChildProcess()
            child.executableURL = URL(fileURLWithPath: batonBinary)
            child.arguments = ["serve", "--listen", "127.0.0.1:0", "--db", missing]
            child.environment = environment
            let stderr = Pipe()
            child.standardError = stderr
            child.standardOutput = FileHandle.nullDevice
            try child.run()
            let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            return (child.terminationStatus, text)
        }
        let leaked = try serve(inherited)
        #expect(leaked.0 == 1 && leaked.1.contains("Warning: ignoring the environment variable BATON_FUZZ_SECONDS"), "\(leaked.1)")
        #expect(try serve(ChildEnvironment.make(inheriting: inherited)) == (1, refusal))
        // And a child given no environment (most of the tests' children) gets none of the runner's.
        let (child, output) = try shell("env")
        #expect(child.terminationStatus == 0 && !output.split(separator: "\n").contains { $0.hasPrefix("BATON_") }, "\(output)")
    }
}

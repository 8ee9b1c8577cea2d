import BatonTestSupport
import Foundation
import Glibc

/// A servlet container as the application behind a gateway: Tests/Fixtures/tomcat/StepUpApp.java
/// on Debian's embedded Tomcat 10 (libtomcat10-embed-java, OpenJDK's javac), compiled once per
/// test process. Tomcat routes a path as servlet containers do: `;` path parameters dropped
/// from every segment, dot segments resolved, percent-escapes decoded once, empty segments
/// merged. Each answer says which servlet took the request ("transfer" for /api/transfer/*,
/// "app" for the rest of /api/*) and the identity headers it got.
final class ServletApplication: @unchecked Sendable {
    static let jar = "/usr/share/java/tomcat10-embed-core.jar"
    /// Whether this machine has Tomcat and a JDK (./scripts/test installs both).
    static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: jar) && FileManager.default.isExecutableFile(atPath: "/usr/bin/javac")
    }

    /// The directory holding StepUpApp.class: under .build (a build output, git-ignored), not
    /// TMPDIR, since it lives as long as the test process (scripts/test checks that the run
    /// leaves nothing in TMPDIR).
    private static let classes: Result<String, any Error> = Result {
        let directory = repositoryRoot + "/.build/test-tomcat-classes"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (status, out, err) = try runProcess("/usr/bin/javac", ["-nowarn", "-cp", jar, "-d", directory,
                                                                   repositoryRoot + "/Tests/Fixtures/tomcat/StepUpApp.java"], check: false)
        guard status == 0 else { throw ServerProcess.ServerError.didNotStart("javac StepUpApp.java: \(out)\(err)") }
        return directory
    }

    let port: UInt16
    private let process = ChildProcess()
    private let directory: String

    init() throws {
        let classes = try Self.classes.get()
        directory = try temporaryDirectory("baton-tomcat-")
        let stdoutPath = directory + "/stdout.log", stderrPath = directory + "/stderr.log"
        for path in [stdoutPath, stderrPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/java")
        process.arguments = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + directory, "-cp", Self.jar + ":" + classes, "StepUpApp", "0"]
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var found: UInt16?
        let deadline = Date().addingTimeInterval(60)  // a JVM on a loaded CI machine
        while found == nil, Date() < deadline, process.isRunning {
            let text = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }) { found = UInt16(line.dropFirst("listening ".count)) }
            usleep(20_000)  // polling a file for a condition, with a deadline
        }
        guard let found else {
            process.send(SIGKILL)
            process.waitUntilExit()
            let errors = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            throw ServerProcess.ServerError.didNotStart("Tomcat (StepUpApp): \(errors.suffix(2000))")
        }
        port = found
    }

    deinit {
        process.send(SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

import Foundation
import Glibc

/// A shell block of a document, marked by `<!-- test: NAME -->` on the line before its
/// ```` ```sh ```` fence: the commands an operator copies, which the tests run as written.
enum DocumentedBlock {
    /// No block of that name in the document.
    struct NotFound: Error, CustomStringConvertible {
        var description: String
    }

    /// The text between the fences of the block named `name` in `document` (repository-relative).
    static func named(_ name: String, in document: String = "docs/deploy.md") throws -> String {
        let lines = try String(contentsOfFile: repositoryRoot + "/" + document, encoding: .utf8).components(separatedBy: "\n")
        guard let marker = lines.firstIndex(of: "<!-- test: \(name) -->"), marker + 1 < lines.count, lines[marker + 1] == "```sh",
              let end = lines[(marker + 2)...].firstIndex(of: "```")
        else { throw NotFound(description: "\(document) has no block marked <!-- test: \(name) --> followed by ```sh") }
        return lines[(marker + 2)..<end].joined(separator: "\n") + "\n"
    }
}

/// Runs a documented block as an operator would at a root shell: bash on a terminal (a
/// pseudo-terminal from script(1)), stopping at the first failing command, in a private mount
/// namespace where the test's directories stand in for system ones (a copy of /etc/nginx over
/// /etc/nginx, a temporary /var/lib). `baton` on PATH is the binary this build produced.
///
/// Two commands need systemd as PID 1, which the test machine lacks: `systemctl VERB UNIT`
/// asks the test to do it (`systemctl` handler), and `systemd-run` records its `-p`
/// properties (for the test to compare with the unit's) and runs its command directly.
struct OperatorShell {
    /// What a run did.
    struct Outcome {
        var status: Int32
        /// Everything the terminal showed, with the shell's trace of each command.
        var transcript: String
        /// Each `systemd-run`'s properties, `Name=value`, in order.
        var systemdRuns: [[String]]
        var systemctlCalls: [String]
    }

    /// A block or a command that did not run as expected.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// (directory of the test, system directory it replaces).
    var binds: [(source: String, target: String)] = []
    /// Typed at the terminal, in order, each once its prompt has appeared.
    var answers: [(prompt: String, reply: String)] = []
    /// Does what `systemctl <arguments>` asks; returns an error message, or nil for success.
    var systemctl: (String) -> String? = { "unexpected: systemctl \($0)" }

    /// Whether this machine lets the tests make a private mount namespace (root, CAP_SYS_ADMIN).
    static let isAvailable: Bool = {
        let probe = ChildProcess()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = ["--mount", "--propagation", "private", "true"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/script")
    }()

    /// Runs `block` and answers its prompts and systemctl calls until it ends (at most `seconds`).
    func run(_ block: String, seconds: Double = 120) throws -> Outcome {
        let control = NSTemporaryDirectory() + "baton-operator-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: control) }
        try (prelude(control: control) + block).write(toFile: control + "/block.sh", atomically: true, encoding: .utf8)
        let mounts = binds.map { "mount --bind \($0.source) \($0.target) && " }.joined()
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["--quiet", "--return", "--command",
                             "unshare --mount --propagation private -- /bin/bash -c '\(mounts)exec /bin/bash \(control)/block.sh'", "/dev/null"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.fileHandleForWriting.close()

        var transcript = "", unanswered = "", calls: [String] = []
        var pendingAnswers = answers[...]
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let chunk = readAvailable(output.fileHandleForReading.fileDescriptor, waitingMilliseconds: 20)
            transcript += chunk
            unanswered += chunk
            if let next = pendingAnswers.first, let range = unanswered.range(of: next.prompt) {
                input.fileHandleForWriting.write(Data((next.reply + "\n").utf8))
                unanswered = String(unanswered[range.upperBound...])
                pendingAnswers = pendingAnswers.dropFirst()
            }
            let request = "\(control)/systemctl.\(calls.count + 1)"
            if let command = try? String(contentsOfFile: request, encoding: .utf8) {
                let call = command.trimmingCharacters(in: .newlines)
                calls.append(call)
                try (systemctl(call) ?? "").write(toFile: request + ".tmp", atomically: false, encoding: .utf8)
                rename(request + ".tmp", request + ".done")
            }
            if !process.isRunning, chunk.isEmpty { break }
            if Date() > deadline {
                process.send(SIGKILL)
                process.waitUntilExit()
                throw Failure(description: "the block did not finish within \(seconds) s:\n\(transcript)")
            }
        }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        var runs: [[String]] = []
        while let text = try? String(contentsOfFile: "\(control)/systemd-run.\(runs.count + 1)", encoding: .utf8) {
            runs.append(text.split(separator: "\n").map(String.init))
        }
        return Outcome(status: process.terminationStatus, transcript: transcript, systemdRuns: runs, systemctlCalls: calls)
    }

    /// The shell set-up before the block: exit on the first failure, trace each command, the
    /// built `baton` first on PATH, and the two systemd commands.
    private func prelude(control: String) -> String {
        """
        set -e -o pipefail
        export PATH='\(productsDirectory.path)':"$PATH"
        cd '\(control)'
        systemctl() {
            _calls=$((${_calls:-0} + 1))
            printf '%s\\n' "$*" > '\(control)'/systemctl.$_calls.new
            mv '\(control)'/systemctl.$_calls.new '\(control)'/systemctl.$_calls
            while [ ! -e '\(control)'/systemctl.$_calls.done ]; do sleep 0.02; done
            local answer
            answer=$(cat '\(control)'/systemctl.$_calls.done)
            [ -z "$answer" ] || { echo "systemctl $*: $answer" >&2; return 1; }
        }
        systemd-run() {
            _runs=$((${_runs:-0} + 1))
            local file='\(control)'/systemd-run.$_runs
            : > "$file"
            while [ $# -gt 0 ]; do
                case "$1" in
                    -p|--property) printf '%s\\n' "$2" >> "$file"; shift 2 ;;
                    --property=*) printf '%s\\n' "${1#--property=}" >> "$file"; shift ;;
                    -p*) printf '%s\\n' "${1#-p}" >> "$file"; shift ;;
                    -*) shift ;;
                    *) break ;;
                esac
            done
            "$@"
        }
        set -x

        """
    }

    /// What `fd` has to read within `waitingMilliseconds` ("" at end of stream or nothing yet).
    private func readAvailable(_ fd: Int32, waitingMilliseconds: Int32) -> String {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, waitingMilliseconds) > 0 else { return "" }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(fd, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
    }
}

/// The shipped unit's `[Service]` settings (the last value of each name).
func shippedUnitSettings() throws -> [String: String] {
    let text = try String(contentsOfFile: repositoryRoot + "/deploy/systemd/baton.service", encoding: .utf8)
    var settings: [String: String] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let equals = line.firstIndex(of: "=") else { continue }
        settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return settings
}

/// The unit settings that make a process the service's user with the service's files: a
/// `systemd-run` for admin commands must give each the unit's value.
let serviceIdentitySettings = ["User", "DynamicUser", "StateDirectory", "StateDirectoryMode", "UMask"]

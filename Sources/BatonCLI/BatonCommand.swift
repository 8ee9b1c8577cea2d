/// The `baton` command line: dispatches to subcommands and prints help and errors in the
/// style of swift-argument-parser (OVERVIEW / USAGE / OPTIONS / SUBCOMMANDS; `Error:` on stderr).
package enum BatonCommand {
    /// The version `baton --version` prints.
    package static let version = "0.2.0"

    /// `baton --version`: name, version and the commit it was built from
    /// (scripts/stamp-build; "unknown" outside git).
    static var versionLine: String { "baton \(version) (commit \(buildCommit))" }

    /// Exit codes: 0 success, 1 failure, 64 usage error (sysexits EX_USAGE).
    package enum ExitCode: Int32 {
        case success = 0
        case failure = 1
        case usage = 64
    }

    static let help = """
        OVERVIEW: Baton, an old-for-new token exchange service.

        USAGE: baton <subcommand>

        OPTIONS:
          --version               Show the version.
          -h, --help              Show help information.

        SUBCOMMANDS:
          serve                   Run the HTTP API server.
          admin                   Manage users, chains and the audit trail.

          See 'baton help <subcommand>' for detailed help.
        """

    /// Runs `baton` with `arguments` (without the program name), writing to `output`.
    package static func run(_ arguments: [String], output: some TextStreams) -> ExitCode {
        switch arguments.first {
        case "help" where arguments.count > 1:
            return run(Array(arguments.dropFirst()) + ["--help"], output: output)
        case nil, "-h", "--help", "help":
            output.out(help)
            return .success
        case "--version":
            output.out(versionLine)
            return .success
        case "serve":
            return ServeCommand.run(Array(arguments.dropFirst()), output: output)
        case "admin":
            return AdminCommand.run(Array(arguments.dropFirst()), output: output)
        case let other?:
            output.err("Error: Unknown subcommand or option '\(other)'.\nUsage: baton <subcommand>\n  See 'baton --help'.")
            return .usage
        }
    }
}

/// Where a command writes: standard output and standard error.
package protocol TextStreams: Sendable {
    /// Writes a line to standard output.
    func out(_ line: String)
    /// Writes a line to standard error.
    func err(_ line: String)
}

/// The process's real stdout and stderr.
package struct StandardStreams: TextStreams {
    package init() {}
    package func out(_ line: String) { print(line) }
    package func err(_ line: String) { writeStandardError(line + "\n") }
}

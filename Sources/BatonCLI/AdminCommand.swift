import BatonCore
import BatonStorage
import Glibc

/// `baton admin …`: operator commands on the database a running server uses, SQLite (WAL;
/// writes wait up to 5 s for the server's lock) or PostgreSQL (row locks), through `AdminStore`.
enum AdminCommand {
    static let database = OptionParser.Option(name: "db", valueName: "path", help: "SQLite database, or a postgresql:// URI. (default: ./baton.db, or BATON_DB)")

    static let subcommands: [Subcommand] = UserCommands.all + ChainCommands.all + [ChainShowCommand.subcommand, AuditCommand.subcommand] + MaintenanceCommands.all + [BackupCommand.subcommand] + WebhookCommands.all + KeyCommands.all + IdentityCommands.all + [MigrateCommand.subcommand]

    /// Subcommand groups (the first word of several paths), with their overview line.
    static let groups: [(name: String, overview: String)] = [
        ("user", "Add, change, disable, enable and list users."),
        ("chain", "Inspect one chain."),
        ("key", "Rotate, list and retire the token keys."),
        ("issuer", "Add, list and remove the identity providers whose tokens are accepted."),
        ("identity", "Link, unlink and list identity providers' identities."),
    ]

    /// `baton admin user --help`: the group's subcommands.
    static func help(ofGroup group: String, overview: String) -> String {
        """
        OVERVIEW: \(overview)

        USAGE: baton admin \(group) <subcommand>

        OPTIONS:
          -h, --help                    Show help information.

        SUBCOMMANDS:
        \(subcommands.filter { $0.path.hasPrefix(group + " ") }.map { Subcommand.column("  " + $0.path, $0.overview) }.joined(separator: "\n"))

          See 'baton admin \(group) <subcommand> --help' for detailed help.
        """
    }

    static var help: String {
        """
        OVERVIEW: Manage users, chains and the audit trail.

        Every subcommand works on the database a running `baton serve` uses.

        USAGE: baton admin <subcommand>

        OPTIONS:
          -h, --help                    Show help information.

        SUBCOMMANDS:
        \(subcommands.map { Subcommand.column("  " + $0.path, $0.overview) }.joined(separator: "\n"))

          See 'baton admin <subcommand> --help' for detailed help.
        """
    }

    static func run(_ arguments: [String], output: some TextStreams) -> BatonCommand.ExitCode {
        if arguments.isEmpty || ["-h", "--help", "help"].contains(arguments[0]) && arguments.count == 1 {
            output.out(help)
            return .success
        }
        // The longest subcommand path the arguments start with.
        let words = arguments.prefix { !$0.hasPrefix("-") }
        guard let subcommand = subcommands.filter({ words.starts(with: $0.path.split(separator: " ").map(String.init)) })
            .max(by: { $0.path.count < $1.path.count })
        else {
            if words.count == 1, let group = groups.first(where: { $0.name == words[0] }),
               arguments.count == 1 || arguments.dropFirst().allSatisfy({ ["-h", "--help"].contains($0) }) {
                output.out(help(ofGroup: group.name, overview: group.overview))
                return .success
            }
            let name = words.prefix(2).joined(separator: " ")
            output.err("Error: Unknown subcommand '\(name.isEmpty ? arguments[0] : name)'.\nUsage: baton admin <subcommand>\n  See 'baton admin --help'.")
            return .usage
        }
        let rest = Array(arguments.dropFirst(subcommand.path.split(separator: " ").count))
        if rest.contains("--help") || rest.contains("-h") {
            output.out(subcommand.help)
            return .success
        }
        Environment.warnAboutUnknownVariables(output)
        let parsed: OptionParser.Parsed
        do {
            parsed = try subcommand.parser.parse(rest, environment: Environment.current)
        } catch {
            return subcommand.usageError(error.message, output)
        }
        let positional = parsed.positional
        if positional.count < subcommand.positionalCount {
            return subcommand.usageError("Missing expected argument '\(subcommand.arguments[positional.count].name)'.", output)
        }
        if positional.count > subcommand.positionalCount {
            return subcommand.usageError("Unexpected argument '\(positional[subcommand.positionalCount])'.", output)
        }
        return subcommand.run(Invocation(values: parsed.values, positional: positional, output: StandardStreams(), subcommand: subcommand, fromEnvironment: parsed.fromEnvironment))
    }
}

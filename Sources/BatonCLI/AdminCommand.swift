import BatonCore
import BatonStore
import Glibc

/// `baton admin …`: operator commands on the database file (shared with a running server).
enum AdminCommand {
    static let help = """
        OVERVIEW: Manage users, chains and the audit trail.

        USAGE: baton admin <subcommand>

        OPTIONS:
          -h, --help              Show help information.

        SUBCOMMANDS:
          user add                Create a user.

          See 'baton admin <subcommand> --help' for detailed help.
        """

    static let userAddParser = OptionParser(options: [
        .init(name: "password-stdin", valueName: nil, help: "Read the password from the first line of standard input.", environment: false),
        .init(name: "db", valueName: "path", help: "SQLite database; created when missing. (default: ./baton.db)"),
        .init(name: "help", valueName: nil, help: "Show help information.", environment: false),
    ])

    static var userAddHelp: String {
        """
        OVERVIEW: Create a user.

        Without --password-stdin, the password is asked twice at the terminal, without echo.
        Passwords need at least \(PasswordHasher.minimumLength) characters.

        USAGE: baton admin user add <name> [--password-stdin] [--db <path>]

        ARGUMENTS:
          <name>                  1-64 letters, digits and . _ @ + -

        OPTIONS:
        \(userAddParser.helpLines())
          -h, --help              Show help information.
        """
    }

    static func run(_ arguments: [String], output: inout some TextStreams) -> BatonCommand.ExitCode {
        switch Array(arguments.prefix(2)) {
        case [], ["--help"], ["-h"], ["help"]:
            output.out(help)
            return .success
        case ["user", "add"]:
            return userAdd(Array(arguments.dropFirst(2)), output: &output)
        default:
            output.err("Error: Unknown subcommand '\(arguments.prefix(2).joined(separator: " "))'.\nUsage: baton admin <subcommand>\n  See 'baton admin --help'.")
            return .usage
        }
    }

    private static func userAdd(_ arguments: [String], output: inout some TextStreams) -> BatonCommand.ExitCode {
        let usage = "Usage: baton admin user add <name> [--password-stdin] [--db <path>]\n  See 'baton admin user add --help'."
        if arguments.contains("--help") || arguments.contains("-h") {
            output.out(userAddHelp)
            return .success
        }
        let values: [String: [String]]
        let positional: [String]
        do {
            (values, positional) = try userAddParser.parse(arguments, environment: Environment.current)
        } catch {
            output.err("Error: \(error.message)\n\(usage)")
            return .usage
        }
        guard positional.count == 1, let name = positional.first else {
            output.err("Error: \(positional.isEmpty ? "Missing expected argument '<name>'." : "Unexpected argument '\(positional[1])'.")\n\(usage)")
            return .usage
        }
        let password: String
        if values["password-stdin"] != nil {
            guard let line = PasswordInput.readLine() else {
                output.err("Error: No password on standard input.")
                return .failure
            }
            password = line
        } else if isatty(0) == 1 {
            guard let typed = PasswordInput.prompt("Password: "), let again = PasswordInput.prompt("Confirm password: ") else {
                output.err("Error: No password entered.")
                return .failure
            }
            guard typed == again else {
                output.err("Error: The passwords do not match.")
                return .failure
            }
            password = typed
        } else {
            output.err("Error: Standard input is not a terminal; pass --password-stdin to read the password from it.\n\(usage)")
            return .usage
        }
        do {
            let store = try TokenStore(path: values["db"]?.last ?? "./baton.db", key: nil)
            defer { store.close() }
            let id = try store.createUser(name, password: password)
            output.out("Created user '\(name)' (id \(id)).")
            return .success
        } catch let error as BatonError {
            output.err("Error: \(error.message)")
            return .failure
        } catch {
            output.err("Error: \(error)")
            return .failure
        }
    }
}

/// Reading a password: one line from standard input, or a terminal prompt without echo.
enum PasswordInput {
    /// The first line of standard input without its `\n` or `\r\n`; nil at end of input.
    static func readLine() -> String? {
        guard var line = Swift.readLine(strippingNewline: true) else { return nil }
        if line.hasSuffix("\r") { line.removeLast() }
        return line
    }

    /// Prompts on the terminal with echo off.
    static func prompt(_ text: String) -> String? {
        writeStandardError(text)
        var saved = termios()
        tcgetattr(0, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSAFLUSH, &silent)
        defer {
            tcsetattr(0, TCSAFLUSH, &saved)
            writeStandardError("\n")
        }
        return readLine()
    }
}

import BatonCore
import BatonStorage
import Glibc

/// `baton admin user add|passwd|disable|enable|list|show`.
enum UserCommands {
    static let passwordOption = OptionParser.Option(
        name: "password-stdin", valueName: nil, help: "Read the password from the first line of standard input.", environment: false)
    static let nameArgument = (name: "<name>", help: "1-64 letters, digits and . _ @ + -")

    static let all: [Subcommand] = [
        Subcommand(
            path: "user add", overview: "Create a user.",
            discussion: """
                Without --password-stdin, the password is asked twice at the terminal,
                without echo. Passwords need \(PasswordRules.minimumLength) to \(PasswordRules.maximumLength) bytes of UTF-8. Names are
                case-insensitive: 'Alice' and 'alice' are one user. Creates the database
                when missing, together with its key file (keep both; back them up together).
                """,
            usage: "<name> [--password-stdin] [--db <path>] [--key-file <path>]", arguments: [nameArgument],
            options: [passwordOption, AdminCommand.database,
                      .init(name: "key-file", valueName: "path", help: "Key file made with a new database. (default: <db>.key, or BATON_KEY_FILE)")],
            positionalCount: 1
        ) { invocation in
            guard let password = readPassword(invocation) else { return invocation.exitCodeForPasswordProblem }
            return invocation.withAdminStore(create: true) { store throws(BatonError) in
                let id = try store.createUser(invocation.positional[0], password: password, context: .admin)
                invocation.output.out("Created user '\(invocation.positional[0])' (id \(id)).")
                return .success
            }
        },
        Subcommand(
            path: "user passwd", overview: "Set a user's password and revoke all their chains.",
            discussion: "Every live chain of the user is revoked with reason password_changed.",
            usage: "<name> [--password-stdin] [--db <path>]", arguments: [(name: "<name>", help: "The user.")],
            options: [passwordOption, AdminCommand.database], positionalCount: 1
        ) { invocation in
            guard let password = readPassword(invocation) else { return invocation.exitCodeForPasswordProblem }
            return invocation.withAdminStore { store throws(BatonError) in
                let revoked = try store.changePassword(invocation.positional[0], to: password, context: .admin)
                invocation.output.out("Changed the password of '\(invocation.positional[0])'; revoked \(chainCount(revoked)).")
                return .success
            }
        },
        Subcommand(
            path: "user disable", overview: "Disable a user and revoke all their chains.",
            discussion: """
                Every live chain of the user is revoked with reason user_disabled; logins
                answer account_disabled. Disabling a disabled user changes nothing, writes
                no event, and says so (exit 0).
                """,
            usage: "<name> [--db <path>]", arguments: [(name: "<name>", help: "The user.")],
            options: [AdminCommand.database], positionalCount: 1
        ) { invocation in
            invocation.withAdminStore { store throws(BatonError) in
                let change = try store.setDisabled(invocation.positional[0], true, context: .admin)
                invocation.output.out(change.changed ? "Disabled '\(change.username)'; revoked \(chainCount(change.revoked))."
                                                     : "User '\(change.username)' is already disabled; nothing changed.")
                return .success
            }
        },
        Subcommand(
            path: "user enable", overview: "Enable a disabled user.",
            usage: "<name> [--db <path>]", arguments: [(name: "<name>", help: "The user.")],
            options: [AdminCommand.database], positionalCount: 1
        ) { invocation in
            invocation.withAdminStore { store throws(BatonError) in
                let change = try store.setDisabled(invocation.positional[0], false, context: .admin)
                invocation.output.out(change.changed ? "Enabled '\(change.username)'." : "User '\(change.username)' is already enabled; nothing changed.")
                return .success
            }
        },
        Subcommand(
            path: "user list", overview: "List users with their live chains.",
            usage: "[--db <path>]", options: [AdminCommand.database]
        ) { invocation in
            invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
                let rows = try store.users().map {
                    [$0.username, String($0.id), $0.createdAt.rfc3339, $0.isDisabled ? "yes" : "no", String($0.liveChains)]
                }
                invocation.output.out(table(["NAME", "ID", "CREATED", "DISABLED", "LIVE CHAINS"], rows))
                return .success
            }
        },
        Subcommand(
            path: "user show", overview: "Show a user's live sessions, as the user sees them (\"your devices\").",
            discussion: """
                Newest first: the chain, the device, when it was created and last used (the
                last login, exchange or password confirmation), and the address and
                User-Agent of that use. End one with `baton admin revoke --chain <id>`.
                """,
            usage: "<name> [--db <path>]", arguments: [(name: "<name>", help: "The user.")],
            options: [AdminCommand.database], positionalCount: 1
        ) { invocation in
            invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
                let sessions = try store.sessions(ofUser: invocation.positional[0])
                let rows = sessions.map {
                    [$0.chainID.description, $0.deviceID, $0.deviceClass.rawValue, $0.deviceName ?? "-", $0.createdAt.rfc3339,
                     $0.lastUsedAt.rfc3339, $0.lastAddress ?? "-", $0.lastUserAgent ?? "-"]
                }
                invocation.output.out("\(plural(sessions.count, "live session")) of '\(TerminalText.escape(invocation.positional[0]))':")
                invocation.output.out(table(["CHAIN", "DEVICE", "CLASS", "NAME", "CREATED", "LAST USED", "LAST IP", "USER AGENT"], rows))
                let links = try store.identityLinks(ofUser: invocation.positional[0])
                if !links.isEmpty {
                    invocation.output.out("\n\(plural(links.count, "linked identity").replacingOccurrences(of: "identitys", with: "identities")):")
                    invocation.output.out(IdentityCommands.linkTable(links))
                }
                return .success
            }
        },
    ]

    static func chainCount(_ chains: [ChainID]) -> String { plural(chains.count, "chain") }

    /// The password from stdin or a terminal prompt; nil after printing why not.
    static func readPassword(_ invocation: Invocation) -> String? {
        if invocation.flag("password-stdin") {
            guard let line = PasswordInput.readLine() else {
                invocation.output.err("Error: No password on standard input.")
                return nil
            }
            return line
        }
        guard isatty(0) == 1 else {
            _ = invocation.usageError("Standard input is not a terminal; pass --password-stdin to read the password from it.")
            return nil
        }
        guard let typed = PasswordInput.prompt("Password: "), let again = PasswordInput.prompt("Confirm password: ") else {
            invocation.output.err("Error: No password entered.")
            return nil
        }
        guard typed == again else {
            invocation.output.err("Error: The passwords do not match.")
            return nil
        }
        return typed
    }
}

extension Invocation {
    /// Usage (64) when stdin was the problem without --password-stdin, otherwise failure (1).
    var exitCodeForPasswordProblem: BatonCommand.ExitCode {
        !flag("password-stdin") && isatty(0) != 1 ? .usage : .failure
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

    /// Prompts on the terminal with echo off. Echo goes off (flushing what was typed ahead)
    /// before the prompt shows, as getpass(3) does, so that nothing typed after the prompt is lost.
    static func prompt(_ text: String) -> String? {
        var saved = termios()
        tcgetattr(0, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSAFLUSH, &silent)
        writeStandardError(text)
        defer {
            tcsetattr(0, TCSAFLUSH, &saved)
            writeStandardError("\n")
        }
        return readLine()
    }
}

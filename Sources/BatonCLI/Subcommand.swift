import BatonCore
import BatonPostgres
import BatonStorage
import BatonStore
import Glibc

/// One `baton admin …` subcommand: its help text, its options, and what it does.
struct Subcommand: Sendable {
    /// The words after `baton admin`, e.g. `user add`.
    var path: String
    var overview: String
    /// Paragraphs after the overview line, or "".
    var discussion = ""
    /// After `baton admin <path>`, e.g. `<name> [--password-stdin] [--db <path>]`.
    var usage: String
    var arguments: [(name: String, help: String)] = []
    var options: [OptionParser.Option]
    /// Positional arguments required (exactly).
    var positionalCount = 0
    var run: @Sendable (Invocation) -> BatonCommand.ExitCode

    var usageLine: String { "baton admin \(path) \(usage)".trimmingTrailingSpaces() }
    var parser: OptionParser { OptionParser(options: options + [.init(name: "help", valueName: nil, help: "Show help information.", environment: false)]) }

    var help: String {
        var text = HelpLayout.wrap("OVERVIEW: \(overview)") + "\n"
        if !discussion.isEmpty { text += "\n\(HelpLayout.wrap(discussion))\n" }
        text += "\n" + HelpLayout.wrap("USAGE: \(usageLine)", continuation: "       ") + "\n"
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n" + arguments.map { Self.column("  " + $0.name, $0.help) }.joined(separator: "\n") + "\n"
        }
        text += "\nOPTIONS:\n" + OptionParser(options: options).helpLines()
        text += (options.isEmpty ? "" : "\n") + "  -h, --help                    Show help information."
        return text
    }

    static func column(_ left: String, _ right: String) -> String { HelpLayout.row(left, right) }

    /// Usage error output.
    func usageError(_ message: String, _ output: some TextStreams) -> BatonCommand.ExitCode {
        output.err("Error: \(message)\nUsage: \(usageLine)\n  See 'baton admin \(path) --help'.")
        return .usage
    }
}

/// A parsed invocation of a subcommand.
struct Invocation: Sendable {
    var values: [String: [String]]
    var positional: [String]
    var output: StandardStreams
    var subcommand: Subcommand
    /// Options whose value came from a `BATON_*` variable.
    var fromEnvironment: Set<String> = []

    func value(_ name: String) -> String? { values[name]?.last }
    func flag(_ name: String) -> Bool { values[name] != nil }
    var databasePath: String { value("db") ?? "./baton.db" }

    func usageError(_ message: String) -> BatonCommand.ExitCode { subcommand.usageError(message, output) }

    func failure(_ message: String) -> BatonCommand.ExitCode {
        output.err("Error: \(message)")
        return .failure
    }

    /// The policy the server runs with, for deciding which chains have ended (same flags and
    /// BATON_ variables as `baton serve`).
    func policy() throws(UsageError) -> Policy {
        var policy = Policy()
        for (name, apply) in [("max-session", { (p: inout Policy, d: Duration) in p.maxSession = d }),
                              ("exchange-window", { (p: inout Policy, d: Duration) in p.exchangeWindow = d })] {
            guard let text = value(name) else { continue }
            let source = OptionParser.Parsed(fromEnvironment: fromEnvironment).source(of: subcommand.parser.option(name))
            guard let duration = parseDuration(text) else {
                throw UsageError(message: "Invalid value '\(text)' for \(source): expected a duration such as 90s, 15m, 7d.")
            }
            guard duration > .zero else { throw UsageError(message: "Invalid value '\(text)' for \(source): must be positive.") }
            apply(&policy, duration)
        }
        return policy
    }

    /// Opens the SQLite database (it must exist unless `create`), runs `body`, closes it.
    /// `create` makes a missing database together with its key file (`--key-file`, default
    /// `<db>.key`), so the key always belongs to the database it was made with. `readOnly`
    /// opens the file read-only (for commands that only read: they work on a 0444 backup copy).
    func withStore(
        create: Bool = false, readOnly: Bool = false, policy: Policy = Policy(), _ body: (TokenStore) throws(BatonError) -> BatonCommand.ExitCode
    ) -> BatonCommand.ExitCode {
        var options = TokenStore.Options()
        options.create = create
        options.readOnly = readOnly
        let store: TokenStore
        do {
            // A new database records its new key's fingerprint (docs/admin.md, "The key file").
            var key: TokenKey?
            if create, access(databasePath, F_OK) != 0 {
                try KeyFile.checkDirectory(ofDatabase: databasePath)
                let keyPath = value("key-file") ?? KeyFile.defaultPath(forDatabase: databasePath)
                key = try KeyFile.load(at: keyPath, forDatabase: databasePath, allowNewKey: false).key
                options.keyFilePath = keyPath
            }
            store = try TokenStore(path: databasePath, key: key, policy: policy, options: options)
        } catch {
            return failure(error.description)
        }
        defer { store.close() }
        return run(body, on: store)
    }
}

extension Invocation {
    /// Runs `body` on the store `--db` names: a SQLite file (as `withStore`, with `create` and
    /// `readOnly`), or a PostgreSQL URI (no key is needed; with `create` the schema is made in a
    /// database that has none, without it such a database is refused; `readOnly` does not
    /// apply: the commands that pass it only read).
    /// Every admin subcommand but `migrate` goes through here, so each is written once.
    func withAdminStore(
        create: Bool = false, readOnly: Bool = false, policy: Policy = Policy(), _ body: (any AdminStore) throws(BatonError) -> BatonCommand.ExitCode
    ) -> BatonCommand.ExitCode {
        guard PostgresURI.isPostgres(databasePath) else {
            return withStore(create: create, readOnly: readOnly, policy: policy) { store throws(BatonError) in try body(store) }
        }
        var options = PostgresStore.Options()
        options.createSchema = create
        options.watchesHeads = false  // a command's changes wait out HeadWatch.bound instead
        let store: PostgresStore
        do { store = try PostgresStore(uri: databasePath, key: nil, policy: policy, options: options) } catch { return failure(error.description) }
        defer { store.close() }
        return run(body, on: store)
    }

    /// `body`'s exit code, or its error printed as `Error: …` (exit 1).
    private func run<Store>(_ body: (Store) throws(BatonError) -> BatonCommand.ExitCode, on store: Store) -> BatonCommand.ExitCode {
        do { return try body(store) } catch {
            if case .unavailable(let explanation) = error { return failure(explanation) }
            return failure(error.message)
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}

/// Aligned columns for a terminal: a header row, then rows, two spaces between columns; every
/// cell through `TerminalText.escape`.
func table(_ header: [String], _ rows: [[String]]) -> String {
    // Cells come from the network and the database: escaped for the terminal, then measured.
    let rows = rows.map { $0.map(TerminalText.escape) }
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    return ([header] + rows).map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}

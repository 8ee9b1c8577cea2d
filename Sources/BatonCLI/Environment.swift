import Glibc

/// The process environment as a dictionary.
enum Environment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            pointer += 1
        }
        return result
    }
}

extension Environment {
    /// Every `BATON_*` variable some command reads: `serve`'s options and the admin commands'.
    static var knownVariables: Set<String> {
        let options = ServeCommand.parser.options + AdminCommand.subcommands.flatMap(\.options)
        return Set(options.filter(\.environment).map(\.environmentName))
    }

    /// The `BATON_*` variables in `environment` that no option reads (a typo, or a setting
    /// from another version), sorted: they would otherwise be ignored without a word.
    static func unknownVariables(in environment: [String: String], known: Set<String>) -> [String] {
        environment.keys.filter { $0.hasPrefix("BATON_") && !known.contains($0) }.sorted()
    }

    /// Writes one warning line per unknown `BATON_*` variable to standard error.
    static func warnAboutUnknownVariables(_ output: some TextStreams) {
        for name in unknownVariables(in: current, known: knownVariables) {
            output.err("Warning: ignoring the environment variable \(name): no option reads it (see 'baton serve --help').")
        }
    }
}

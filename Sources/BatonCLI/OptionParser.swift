import BatonCore

/// A usage error: the message for `Error:`, and which command's help to point at.
struct UsageError: Error, Equatable {
    var message: String
}

/// Hand-written option parsing: `--name value`, `--name=value`, boolean flags, repeatable
/// options, and `BATON_<NAME>` environment fallbacks (flags win).
struct OptionParser {
    /// One option a command accepts.
    struct Option {
        var name: String
        var valueName: String?  // nil: a boolean flag
        var help: String
        var repeatable = false
        var environment: Bool = true
        /// How a repeatable option's `BATON_` variable separates its values: commas
        /// (`BATON_TRUSTED_PROXY=10.0.0.0/8,127.0.0.1/32`), or white space for values that may
        /// hold commas themselves (a URL, a file name, `--webhook-events`' own comma list).
        var environmentSeparator: EnvironmentSeparator = .comma

        var environmentName: String { "BATON_" + name.uppercased().replacingHyphens() }
    }

    /// Between the values of a repeatable option's `BATON_` variable.
    enum EnvironmentSeparator {
        case comma
        case whiteSpace
    }

    /// What `parse` found: values by option name, positional arguments, and where each value came from.
    struct Parsed {
        /// Values by option name; flags map to "true".
        var values: [String: [String]] = [:]
        var positional: [String] = []
        /// Options whose value came from a `BATON_*` variable rather than the command line.
        var fromEnvironment: Set<String> = []

        /// How an error names the source of `name`'s value: `'--token-ttl <duration>'` for a flag,
        /// `BATON_TOKEN_TTL` for a variable (so the operator looks in the right place).
        func source(of option: Option) -> String {
            fromEnvironment.contains(option.name) ? option.environmentName : "'--\(option.name)\(option.valueName.map { " <\($0)>" } ?? "")'"
        }
    }

    let options: [Option]

    /// The option called `name`; a programming error when there is none.
    func option(_ name: String) -> Option {
        guard let option = options.first(where: { $0.name == name }) else { preconditionFailure("no option --\(name)") }
        return option
    }

    /// Parses `arguments`, then fills options not given from `BATON_<NAME>` variables.
    func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Parsed {
        var values: [String: [String]] = [:]
        var positional: [String] = []
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--"), argument.count > 2 else {
                if argument.hasPrefix("-"), argument != "-" { throw UsageError(message: "Unknown option '\(argument)'.") }
                positional.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options.first(where: { $0.name == name }) else { throw UsageError(message: "Unknown option '--\(name)'.") }
            let value: String
            if option.valueName == nil {
                guard inlineValue == nil else { throw UsageError(message: "'--\(name)' takes no value.") }
                value = "true"
            } else if let inlineValue {
                value = inlineValue
            } else if let next = rest.popFirst() {
                value = next
            } else {
                throw UsageError(message: "Missing value for '--\(name) <\(option.valueName!)>'.")
            }
            if !option.repeatable, values[name] != nil { throw UsageError(message: "'--\(name)' was given more than once.") }
            values[name, default: []].append(value)
        }
        var fromEnvironment: Set<String> = []
        for option in options where option.environment && values[option.name] == nil {
            if let value = environment[option.environmentName], !value.isEmpty {
                values[option.name] = !option.repeatable ? [value]
                    : option.environmentSeparator == .comma ? value.split(separator: ",").map { String($0.trimmingSpacesAndTabs()) }
                    : value.split(whereSeparator: \.isWhitespace).map(String.init)
                fromEnvironment.insert(option.name)
            }
        }
        return Parsed(values: values, positional: positional, fromEnvironment: fromEnvironment)
    }

    /// The OPTIONS section of a help text, without `--help` (every help text ends with its
    /// own `-h, --help` line).
    func helpLines() -> String {
        options.filter { $0.name != "help" }.map { option in
            HelpLayout.row("  --\(option.name)" + (option.valueName.map { " <\($0)>" } ?? ""), option.help)
        }.joined(separator: "\n")
    }
}

/// Parses `90s`, `15m`, `2h`, `7d`, `250ms`, or `0`.
func parseDuration(_ text: String) -> Duration? {
    if text == "0" { return .zero }
    let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
    for (suffix, milliseconds) in units where text.hasSuffix(suffix) {
        let digits = text.dropLast(suffix.count)
        if suffix == "s", digits.hasSuffix("m") { continue }  // "ms" handled above
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let value = Int64(digits), value <= Int64.max / milliseconds / 1000 else { return nil }
        return .milliseconds(value * milliseconds)
    }
    return nil
}

extension String {
    fileprivate func replacingHyphens() -> String { String(map { $0 == "-" ? "_" : $0 }) }
}

extension Substring {
    fileprivate func trimmingSpacesAndTabs() -> Substring {
        var slice = self
        while slice.first == " " || slice.first == "\t" { slice.removeFirst() }
        while slice.last == " " || slice.last == "\t" { slice.removeLast() }
        return slice
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

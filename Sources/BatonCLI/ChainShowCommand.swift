import BatonCore
import BatonStorage

/// `baton admin chain show`: one chain's lineage as text, JSON or an HTML page
/// (the renderers are `LineageText` and `LineageHTML`).
enum ChainShowCommand {
    static let subcommand = Subcommand(
        path: "chain show", overview: "Show one chain's whole lineage, with any reuse or fork.",
        discussion: """
            Every token of the chain, generation by generation: when it was issued and
            to whom (IP, user agent, device), when it ended and how; a reuse or fork
            with both sides. html is one self-contained page (an inline SVG timeline,
            no script, no external file) to attach to an incident report:
              baton admin chain show <id> --format html > chain.html
            """,
        usage: "<id> [--format <table|json|html>] [--db <path>]",
        arguments: [(name: "<id>", help: "The chain (16 hex digits, as `chains` and `audit` print).")],
        options: [.init(name: "format", valueName: "table|json|html", help: "Text, one JSON object, or an HTML page. (default: table)", environment: false),
                  AdminCommand.database],
        positionalCount: 1
    ) { invocation in
        let text = invocation.positional[0]
        guard let id = ChainID(hex: text) else { return invocation.usageError("Invalid value '\(text)' for '<id>': expected 16 hex digits.") }
        let format = invocation.value("format") ?? "table"
        guard ["table", "json", "html"].contains(format) else {
            return invocation.usageError("Invalid value '\(format)' for '--format <table|json|html>': expected table, json or html.")
        }
        return invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
            let lineage = try store.lineage(of: id)
            switch format {
            case "json": invocation.output.out(TerminalText.json(LineageText.json(lineage)))
            case "html": invocation.output.out(LineageHTML.render(lineage, version: BatonCommand.version))
            default: invocation.output.out(LineageText.table(lineage))
            }
            return .success
        }
    }
}

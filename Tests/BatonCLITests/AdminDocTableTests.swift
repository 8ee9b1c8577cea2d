@testable import BatonCLI
import Foundation
import Testing

/// docs/admin.md's subcommand table names every `baton admin` subcommand (its `key` rows were
/// once missing), so the table cannot fall behind the code.
struct AdminDocTableTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    @Test func everySubcommandHasARowInAdminDoc() throws {
        let text = try String(contentsOfFile: Self.repositoryRoot + "/docs/admin.md", encoding: .utf8)
        let start = try #require(text.range(of: "## Subcommands"))
        let end = try #require(text.range(of: "\n## ", range: start.upperBound..<text.endIndex))
        // The first cell of each row of the table.
        // (A `\|` inside a cell is an escaped pipe, not a column.)
        let firstCells = text[start.upperBound..<end.lowerBound].replacingOccurrences(of: "\\|", with: "/").split(separator: "\n")
            .filter { $0.hasPrefix("| `") }
            .map { String($0.dropFirst(2).split(separator: "|", maxSplits: 1).first ?? "") }
        let named = firstCells.flatMap { $0.matches(of: /`([a-z][a-z -]*[a-z])/).map { String($0.output.1) } }
        for subcommand in AdminCommand.subcommands {
            #expect(named.contains { $0 == subcommand.path || $0.hasPrefix(subcommand.path + " ") },
                    "docs/admin.md's subcommand table has no row for `\(subcommand.path)` (rows name: \(named))")
        }
    }
}

import BatonCore
import Foundation
import Testing

/// The lists of revocation reasons and audit kinds the docs spell out are the code's own
/// (`RevocationReason`, `AuditKind`): a reason added to the code and not to a list (as
/// `key_retired` once was, in three documents) fails here.
struct DocumentedReasonListsTests {
    /// The backquoted names in `document` from the first occurrence of `start` up to `end`.
    static func names(in document: String, from start: String, to end: String) throws -> Set<String> {
        let text = try String(contentsOfFile: repositoryRoot + "/" + document, encoding: .utf8)
        let from = try #require(text.range(of: start), "\(document) no longer holds the list starting \(start)")
        let to = try #require(text.range(of: end, range: from.lowerBound..<text.endIndex), "\(document): no end of the list")
        let list = text[from.lowerBound..<to.lowerBound]
        return Set(list.matches(of: /`([a-z_]+)`/).map { String($0.output.1) })
    }

    static let revocationLists: [(document: String, start: String, end: String)] = [
        ("docs/api.md", "(reason: `reuse_detected`", ")"),
        ("docs/operations.md", "why (`reuse_detected`", ")"),
        ("docs/webhooks.md", "audit trail (`reuse_detected`", ")"),
    ]

    @Test(arguments: revocationLists.indices)
    func everyRevocationReasonIsListed(index: Int) throws {
        let list = Self.revocationLists[index]
        let documented = try Self.names(in: list.document, from: list.start, to: list.end)
        #expect(documented == Set(RevocationReason.allCases.map(\.rawValue)), "\(list.document)")
    }

    @Test func everyAuditKindIsListedInAdminDoc() throws {
        let documented = try Self.names(in: "docs/admin.md", from: "The kinds are\n  `login_succeeded`", to: "(`baton admin audit --help`")
        #expect(documented == Set(AuditKind.allCases.map(\.rawValue)))
    }
}

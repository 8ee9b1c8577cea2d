@testable import BatonCLI
@testable import BatonCore
import BatonStorage
import Testing

/// The pure functions behind `chain show`, help texts, `audit` and the environment check.
struct RendererTests {
    static let t0 = RFC3339.parse("2026-11-22T09:24:10.100Z")!

    /// A fork: generation 1 was replaced by a retry, then the replaced token came back.
    static let fork = ChainLineage(
        id: ChainID(hex: "00000000000000ab")!, username: "alice", deviceID: "phone-1", deviceClass: .mobile, createdAt: t0,
        revokedAt: t0 + .milliseconds(900), revocation: .forkDetected,
        tokens: [
            .init(generation: 0, issuedAt: t0, issuedTo: .init(at: t0, ip: "192.0.2.1", userAgent: "App/1", deviceID: "phone-1"),
                  endedAt: t0 + .milliseconds(300), end: .exchanged, endedBy: .init(at: t0 + .milliseconds(300), ip: "192.0.2.1")),
            .init(generation: 1, issuedAt: t0 + .milliseconds(300), issuedTo: .init(at: t0 + .milliseconds(300), ip: "192.0.2.1"),
                  endedAt: t0 + .milliseconds(600), end: .replaced, endedBy: .init(at: t0 + .milliseconds(600), ip: "192.0.2.2")),
            .init(generation: 1, issuedAt: t0 + .milliseconds(600), issuedTo: .init(at: t0 + .milliseconds(600), ip: "192.0.2.2")),
        ],
        incidents: [.init(kind: .forkDetected, generation: 1, original: .init(at: t0 + .milliseconds(300), ip: "192.0.2.1"),
                          attempt: .init(at: t0 + .milliseconds(900), ip: "<evil>", userAgent: "curl/8"))])

    @Test func tableMarksTheForkedTokenAndShowsBothSides() {
        let text = LineageText.table(Self.fork)
        #expect(text.hasPrefix("Chain 00000000000000ab of 'alice', device phone-1 (mobile)\nCreated 2026-11-22T09:24:10.100Z; revoked 2026-11-22T09:24:11.000Z (fork_detected)\n\n"))
        #expect(text.contains("\n1    2026-11-22T09:24:10.400Z  2026-11-22T09:24:10.700Z  replaced, FORKED  192.0.2.1 "))
        #expect(text.contains("\n1    2026-11-22T09:24:10.700Z  -                         head (revoked)    192.0.2.2 "))
        #expect(text.contains("\nFORK of generation 1:\n  SIDE      AT                        IP         USER AGENT  DEVICE\n"))
        #expect(text.hasSuffix("\n  attempt   2026-11-22T09:24:11.000Z  <evil>     curl/8      -"))
    }

    @Test func htmlIsOneSelfContainedPageWithTheForkPoint() {
        let html = LineageHTML.render(Self.fork, version: "0.1.0")
        #expect(html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">") && html.hasSuffix("</html>\n"))
        #expect(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\"") && html.contains(">FORK</text>"))
        #expect(html.contains("&lt;evil&gt;") && !html.contains("<evil>"))  // escaped
        #expect(!html.contains("<script") && !html.contains("src=") && !html.contains("<link") && !html.contains("url("))
        #expect(html.components(separatedBy: "<circle").count - 1 == 2)  // the fork point and the attempt
        #expect(LineageHTML.render(Self.fork, version: "0.1.0") == html)  // same lineage, same bytes
    }

    @Test func jsonCarriesEveryTokenAndIncident() {
        let json = LineageText.json(Self.fork)
        #expect(json.contains(#""chain_id":"00000000000000ab""#) && json.contains(#""revoked_reason":"fork_detected""#))
        #expect(json.contains(#""kind":"fork_detected""#) && json.contains(#""ended_by":"replaced""#))
    }

    @Test func helpRowsWrapAt80Columns() {
        let row = HelpLayout.row("  --name <value>", String(repeating: "word ", count: 30))
        #expect(row.split(separator: "\n").allSatisfy { $0.count <= 80 })
        #expect(row.split(separator: "\n").dropFirst().allSatisfy { $0.hasPrefix(String(repeating: " ", count: 32) + "word") })
        #expect(HelpLayout.row("  --a-very-long-option-name <value>", "Help.") == "  --a-very-long-option-name <value>\n" + String(repeating: " ", count: 32) + "Help.")
        #expect(HelpLayout.wrap("USAGE: " + String(repeating: "[--x] ", count: 20), continuation: "       ").split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test func untilWithoutAFractionCoversItsSecond() {
        #expect(AuditCommand.untilBound(Self.t0, text: "2026-11-22T09:24:10.100Z") == Self.t0)
        let second = RFC3339.parse("2026-11-22T09:24:10Z")!
        #expect(AuditCommand.untilBound(second, text: "2026-11-22T09:24:10Z").rfc3339Milliseconds == "2026-11-22T09:24:10.999Z")
    }

    @Test func unknownBatonVariablesAreListed() {
        let known = Environment.knownVariables
        #expect(known.contains("BATON_TOKEN_TTL") && known.contains("BATON_DB") && known.contains("BATON_KEY_FILE"))
        #expect(Environment.unknownVariables(in: ["BATON_TOKN_TTL": "5m", "BATON_DB": "x", "HOME": "/"], known: known) == ["BATON_TOKN_TTL"])
    }

    @Test func optionErrorsNameTheirSource() throws {
        let fromEnvironment = #expect(throws: UsageError.self) { _ = try ServeCommand.settings([], environment: ["BATON_IDLE_TIMEOUT": "0"]) }
        #expect(fromEnvironment?.message == "Invalid value '0' for BATON_IDLE_TIMEOUT: must be positive.")
        let fromFlag = #expect(throws: UsageError.self) { _ = try ServeCommand.settings(["--idle-timeout", "x"], environment: [:]) }
        #expect(fromFlag?.message == "Invalid value 'x' for '--idle-timeout <duration>': expected a duration such as 90s, 15m, 7d.")
    }
}

/// `audit --follow`'s window: an event committed late with a lower id is printed once.
struct AuditFollowTests {
    static func event(_ id: Int64) -> AuditRecord {
        AuditRecord(id: id, at: Instant(milliseconds: id), kind: "exchanged", username: nil, chainID: nil, generation: nil,
                    ip: nil, userAgent: nil, deviceID: nil, detail: "{}")
    }

    @Test func aLateCommitBelowTheNewestIDIsPrintedOnceAndNothingTwice() {
        var follow = AuditFollow(newestID: 10, printed: [8, 10])
        #expect(follow.readAfter == 0)
        // id 9 was taken before 10 but committed after it; 11 is new.
        #expect(follow.unseen([8, 9, 10, 11].map(Self.event)).map(\.id) == [9, 11])
        #expect(follow.unseen([8, 9, 10, 11].map(Self.event)).isEmpty)
        #expect(follow.newestID == 11)
    }

    @Test func theWindowTrailsTheNewestIDByAThousand() {
        var follow = AuditFollow(newestID: 5000, printed: [])
        #expect(follow.readAfter == 4000)
        _ = follow.unseen([Self.event(6000)])
        #expect(follow.readAfter == 5000)
    }
}

import BatonTestSupport
import Foundation
import Testing

/// baton-sim (docs/reliability.md): one seed is one run, replayable exactly. The many-seed runs,
/// the regression seeds and the mutants run in scripts/test on the release build.
struct SimulationTests {
    static func digest(_ output: String) -> String? {
        output.split(separator: "\n").last.flatMap { $0.hasPrefix("digest ") ? String($0.dropFirst(7)) : nil }
    }

    @Test func theSameSeedGivesTheSameRunAndDigestInAnotherProcess() throws {
        let first = try runProduct("baton-sim", ["--seed", "41", "--log"])
        let second = try runProduct("baton-sim", ["--seed", "41", "--log"])
        #expect(first.0 == 0, "\(first.1)\(first.2)")
        let digest = try #require(Self.digest(first.1), "\(first.1)")
        #expect(Self.digest(second.1) == digest)
        #expect(first.1 == second.1)  // the whole event log, line for line
        #expect(first.1.contains("POST /v1/exchange"))  // the run exchanged: it is not an empty world
    }

    @Test func aSeedRunAfterOthersInOneProcessGivesItsOwnRunStill() throws {
        // Nothing leaks from one seed into the next (executor, timers, static state).
        let alone = try runProduct("baton-sim", ["--seed", "43"])
        let third = try runProduct("baton-sim", ["--seeds", "3", "--base-seed", "41", "--digests"])
        #expect(third.0 == 0, "\(third.1)\(third.2)")
        #expect(third.1.contains("seed 43 digest \(try #require(Self.digest(alone.1)))"), "\(third.1)")
    }

    @Test func anotherSeedGivesAnotherRun() throws {
        let first = try runProduct("baton-sim", ["--seed", "41"])
        let other = try runProduct("baton-sim", ["--seed", "42"])
        #expect(Self.digest(first.1) != nil && Self.digest(first.1) != Self.digest(other.1))
    }

    @Test func anUnknownMutantOrFlagIsAUsageErrorNamingIt() throws {
        let mutant = try runProduct("baton-sim", ["--mutant", "nonsense", "--seed", "1"])
        #expect(mutant.0 == 64)
        #expect(mutant.2.contains("no mutant named 'nonsense'"))
        let flag = try runProduct("baton-sim", ["--seedz", "1"])
        #expect(flag.0 == 64 && flag.2.contains("unknown argument '--seedz'"))
        let seeds = try runProduct("baton-sim", ["--seeds", "many"])
        #expect(seeds.0 == 64 && seeds.2.contains("--seeds must be a whole number, not 'many'"))
    }

    /// A regression list's commented-out line is skipped whole, even when its first word after
    /// the `#` is a number (the reader once took `# 215745220614506 ...` for a seed); a line that
    /// is neither a seed nor a comment is an error naming its line.
    @Test func aRegressionListSkipsCommentedSeedsAndRefusesAMalformedLine() throws {
        let directory = try temporaryDirectory("sim-list")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let list = URL(fileURLWithPath: directory).appendingPathComponent("regressions.txt")
        try "# a header\n41  # a seed\n\n# 42 commented out\n   # 43 indented, commented out\n".write(to: list, atomically: true, encoding: .utf8)
        let run = try runProduct("baton-sim", ["--regressions", list.path])
        #expect(run.0 == 0, "\(run.1)\(run.2)")
        #expect(run.1.contains("1 regression seeds from"), "\(run.1)")
        try "# written on Windows\r\n41\r\n".write(to: list, atomically: true, encoding: .utf8)
        let crlf = try runProduct("baton-sim", ["--regressions", list.path])
        #expect(crlf.0 == 0 && crlf.1.contains("1 regression seeds from"), "\(crlf.1)\(crlf.2)")
        try "41\nforty-two # a seed?\n".write(to: list, atomically: true, encoding: .utf8)
        let bad = try runProduct("baton-sim", ["--regressions", list.path])
        #expect(bad.0 == 1)
        #expect(bad.2.contains("line 2 does not start with a seed"), "\(bad.2)")
    }
}

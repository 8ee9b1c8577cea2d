import BatonTestSupport
import Foundation
import Testing

/// The false-logout benchmark's short run (issue 18): a few hundred token lifetimes of real
/// client processes (`baton-fault-device`) through the fault-injecting relay, against a real
/// `baton serve` with the default retry grace and 2-s tokens, every fault three times as
/// frequent as in the full run (and a theft on each theft device's third token). It fails on any logout that no
/// theft caused outside the by-design and replay rows, on any theft the server missed (a thief
/// with the key too must be caught by reuse detection), and on any device process that crashed.
/// Run twice: with bound devices (DPoP; no row is by design, and a token-only theft is
/// refused) and with unbound ones (Bearer).
/// The full run (20,000 lifetimes) is scripts/bench-false-logout; docs/benchmarks.md has it.
@Suite(.ownThreads) struct FalseLogoutBenchmarkTests {
    @Test(arguments: ["bound", "unbound"])
    func aShortRunLogsNobodyOutFalselyAndCatchesEveryTheft(binding: String) async throws {
        // Every kind (the default): suspend-answer-kept included (a deadline that fires late on
        // resume first lets the answer that arrived while the app was stopped be read), and
        // issue 29's: slow-answer, idle-after-failure, clock-jump, theft-with-key. Two devices
        // of each.
        let run = try await offPool {
            try runCommand(productsDirectory.appendingPathComponent("baton-fault-bench").path,
                           ["--devices", "38", "--lifetimes", "456", "--fault-scale", "3", "--seed", "18", "--max-seconds", "240",
                            "--binding", binding])
        }
        let report = "\(run.stdout)\n\(run.stderr.suffix(3000))"
        let verdict = try #require(run.stdout.split(separator: "\n").last { $0.hasPrefix("verdict:") }, "\(report)")
        #expect(verdict.contains("false-logouts 0 outside"), "\(report)")
        #expect(verdict.contains("binding \(binding);"), "\(report)")
        // A device process that crashed was restarted on its store, and is a failure here.
        #expect(verdict.contains("crashes 0;"), "\(report)")
        // Bound, the answer-lost rows (away longer than the grace) are among the must-be-0 rows.
        #expect(run.stdout.contains("BY DESIGN") == (binding == "unbound"), "\(report)")
        // "thefts detected N/M": every theft ended its chain.
        let thefts = verdict.firstMatch(of: /thefts detected (\d+)\/(\d+)/)
        #expect(thefts != nil && thefts?.output.1 == thefts?.output.2 && thefts?.output.2 != "0", "\(report)")
        #expect(!run.stdout.contains("stopped at the time limit"), "\(report)")
        #expect(run.status == 0, "\(report)")
    }
}

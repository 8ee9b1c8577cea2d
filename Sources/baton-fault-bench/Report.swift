/// The benchmark's table: one row per fault kind, the kinds that must be at 0 summed, the
/// by-design kinds and the replay summed in rows of their own, then the device processes that
/// crashed (a line of its own, must be 0), why app requests failed and why chains ended.
struct Report {
    let rows: [(FaultKind, Tally)]
    let faultScale: Double
    /// Whether the devices bound their chains (DPoP): then no row is by design.
    let bound: Bool

    var mustBeZero: Tally { rows.filter { $0.0.mustBeZero(bound: bound) }.map(\.1).reduce(Tally(), +) }
    var byDesign: Tally { rows.filter { $0.0.isByDesign(bound: bound) }.map(\.1).reduce(Tally(), +) }
    var replays: Tally { rows.filter { $0.0.isReplay }.map(\.1).reduce(Tally(), +) }
    var total: Tally { mustBeZero + byDesign + replays }

    func render() -> String {
        let header = ["fault", "rate", "devices", "lifetimes", "faults", "false logouts", "thefts stopped", "crashes", "exch/lifetime", "app failures"]
        var lines: [[String]] = [header]
        func line(_ name: String, _ rate: String, _ tally: Tally) -> [String] {
            [name, rate, "\(tally.devices)", "\(tally.lifetimes)", "\(tally.faults)", "\(tally.forcedLogouts)",
             tally.thefts == 0 ? "-" : "\(tally.theftsDetected)/\(tally.thefts)", "\(tally.crashes)", tally.exchangesPerLifetime, "\(tally.failureCount)"]
        }
        for (kind, tally) in rows where kind.mustBeZero(bound: bound) { lines.append(line(kind.rawValue, kind.rateText(scaledBy: faultScale), tally)) }
        lines.append(line("MUST BE 0 (all of the above)", "", mustBeZero))
        if !bound {
            for (kind, tally) in rows where kind.byDesign { lines.append(line(kind.rawValue, kind.rateText(scaledBy: faultScale), tally)) }
            lines.append(line("BY DESIGN (answer lost, away > grace)", "", byDesign))
        }
        for (kind, tally) in rows where kind.isReplay { lines.append(line(kind.rawValue, kind.rateText(scaledBy: faultScale), tally)) }
        lines.append(line("REPLAY (a theft to the server)", "", replays))
        lines.append(line("TOTAL", "", total))
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        var text = lines.map { row in
            "| " + row.indices.map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
        }
        text.insert("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|", at: 1)
        text.append("")
        text.append("Device processes crashed or exited unasked (must be 0; each restarted on its store): "
                    + (total.crashes == 0 ? "0" : "\(total.crashes): \(Tally.top(total.crashKinds, 6))"))
        for (kind, tally) in rows where tally.crashes > 0 {
            text.append("  \(kind.rawValue): \(Tally.top(tally.crashKinds, 6))")
        }
        let repeated = rows.filter { $0.1.repeatedExchanges > 0 }.map { "\($0.0.rawValue) \($0.1.repeatedExchanges)" }
        text.append("Exchange requests repeating a token (retries; in clock-jump a takeover of a live claim), per kind: "
                    + (repeated.isEmpty ? "none" : repeated.joined(separator: ", ")))
        text.append("Why app requests failed, per kind:")
        for (kind, tally) in rows where tally.failureCount > 0 {
            text.append("  \(kind.rawValue): \(Tally.top(tally.failures, 6))")
        }
        text.append("Why chains ended, per kind (stolen or not):")
        for (kind, tally) in rows where !tally.logoutReasons.isEmpty {
            text.append("  \(kind.rawValue): \(Tally.top(tally.logoutReasons, 6))")
        }
        if !total.missedThefts.isEmpty { text.append("Thefts missed: \(Tally.top(total.missedThefts, 6))") }
        let logins = total.loginFailures
        text.append("Logins tried again (not counted above): \(logins.isEmpty ? "none" : Tally.top(logins, 6))")
        return text.joined(separator: "\n")
    }

    /// The line the test suite reads.
    var verdict: String {
        let zero = mustBeZero
        return "verdict: false-logouts \(zero.forcedLogouts) outside the by-design and replay rows"
            + " (by design: \(byDesign.forcedLogouts), replay: \(replays.forcedLogouts));"
            + " thefts detected \(total.theftsDetected)/\(total.thefts); crashes \(total.crashes); lifetimes \(total.lifetimes);"
            + " binding \(bound ? "bound" : "unbound");"
            + " exchanges per lifetime \(zero.exchangesPerLifetime)"
    }
}

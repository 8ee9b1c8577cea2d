import BatonCore
import BatonStorage
import Glibc

/// `baton admin audit`: the audit trail, as a table or JSON lines, optionally followed.
enum AuditCommand {
    static let subcommand = Subcommand(
        path: "audit", overview: "Show audit events, newest last.",
        discussion: """
            --since takes a duration back from now (1h, 7d) or an RFC 3339 time; --until
            a time. A time without milliseconds covers its whole second: --until
            09:24:10Z includes 09:24:10.999. Times are shown with milliseconds. When
            --limit cuts the list, a note on stderr says how many older events exist.
            JSON lines carry at, kind, username, chain_id, generation, ip, user_agent,
            device_id and detail; a reuse_detected detail holds both sides (original
            and attempt). --kind takes one of:
            """ + "\n" + kindList,
        usage: "[--user <name>] [--chain <id>] [--kind <kind>] [--since <dur|time>] [--until <time>] [--limit <n>] [--format <table|json>] [--follow] [--db <path>]",
        options: [
            .init(name: "user", valueName: "name", help: "Only events of this username.", environment: false),
            .init(name: "chain", valueName: "id", help: "Only events of this chain.", environment: false),
            .init(name: "kind", valueName: "kind", help: "Only this kind (listed above).", environment: false),
            .init(name: "since", valueName: "dur|time", help: "Only events at or after this.", environment: false),
            .init(name: "until", valueName: "time", help: "Only events at or before this.", environment: false),
            .init(name: "limit", valueName: "n", help: "The newest n events. (default: 100)", environment: false),
            .init(name: "format", valueName: "table|json", help: "Aligned columns, or one JSON object per line. (default: table)", environment: false),
            .init(name: "follow", valueName: nil, help: "Keep printing new events until interrupted.", environment: false),
            AdminCommand.database,
        ]
    ) { invocation in
        var filter = AuditFilter()
        filter.username = invocation.value("user")
        if let text = invocation.value("chain") {
            guard let id = ChainID(hex: text) else { return invocation.usageError("Invalid value '\(text)' for '--chain <id>': expected 16 hex digits.") }
            filter.chainID = id
        }
        if let text = invocation.value("kind") {
            guard let kind = AuditKind(rawValue: text) else {
                return invocation.usageError("Invalid value '\(text)' for '--kind <kind>': expected one of \(AuditKind.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            filter.kind = kind
        }
        let now = SystemClock().now()
        if let text = invocation.value("since") {
            guard let instant = parseDuration(text).map({ now - $0 }) ?? RFC3339.parse(text) else {
                return invocation.usageError("Invalid value '\(text)' for '--since <dur|time>': expected a duration such as 1h or a time such as 2026-11-22T04:00:00Z.")
            }
            filter.since = instant
        }
        if let text = invocation.value("until") {
            guard let instant = RFC3339.parse(text) else {
                return invocation.usageError("Invalid value '\(text)' for '--until <time>': expected a time such as 2026-11-22T04:00:00Z.")
            }
            filter.until = untilBound(instant, text: text)
        }
        filter.limit = 100
        if let text = invocation.value("limit") {
            guard let limit = Int(text), limit > 0 else { return invocation.usageError("Invalid value '\(text)' for '--limit <n>': expected a positive whole number.") }
            filter.limit = limit
        }
        let format = invocation.value("format") ?? "table"
        guard format == "table" || format == "json" else { return invocation.usageError("Invalid value '\(format)' for '--format <table|json>'.") }
        return invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
            let events = try store.auditEvents(filter)
            print(events, format: format, header: true, output: invocation.output)
            if let limit = filter.limit, events.count == limit {
                var all = filter
                all.limit = nil
                let total = try store.auditEventCount(all)
                if total > events.count { invocation.output.err(truncationNote(shown: events.count, total: total)) }
            }
            guard invocation.flag("follow") else { return .success }
            filter.limit = nil
            var newestOnly = AuditFilter()
            newestOnly.limit = 1
            let newestID = if let last = events.last { last.id } else { try store.auditEvents(newestOnly).last?.id ?? 0 }
            // Not new: what was printed above, and what --limit cut (older than the first printed).
            // An event at or below `newestID` that committed after the read above was neither,
            // and is printed by the first read of the loop, as is anything newer.
            filter.afterID = AuditFollow(newestID: newestID, printed: []).readAfter
            let cutBelow = events.first?.id ?? 0
            let cut = try store.auditEvents(filter).lazy.map(\.id).filter { $0 < cutBelow }
            var follow = AuditFollow(newestID: newestID, printed: events.map(\.id) + cut)
            while true {
                usleep(250_000)  // the polling interval of `tail -f`, not a synchronisation
                filter.afterID = follow.readAfter
                print(follow.unseen(try store.auditEvents(filter)), format: format, header: false, output: invocation.output)
            }
        }
    }

    /// Every audit kind, comma-separated, wrapped to lines of at most 78 characters, indented.
    static var kindList: String {
        var lines: [String] = []
        var line = ""
        for (index, kind) in AuditKind.allCases.enumerated() {
            let item = kind.rawValue + (index < AuditKind.allCases.count - 1 ? "," : ".")
            if !line.isEmpty, line.count + 1 + item.count > 76 {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "  " : " ") + item
        }
        return (lines + [line]).joined(separator: "\n")
    }

    /// The last instant `--until` admits: the time itself when it has a fraction, otherwise
    /// the end of its second (the table once showed whole seconds; people paste them).
    static func untilBound(_ instant: Instant, text: String) -> Instant {
        text.contains(".") ? instant : instant + .milliseconds(999)
    }

    /// The stderr note when `--limit` cut the list (stderr keeps JSON output parseable).
    static func truncationNote(shown: Int, total: Int) -> String {
        "Note: showing the newest \(shown) of \(total) matching events; \(total - shown) older not shown. "
            + "See them with --limit \(total), or narrow with --since/--until."
    }

    static func print(_ events: [AuditRecord], format: String, header: Bool, output: some TextStreams) {
        guard !events.isEmpty || header else { return }
        if format == "json" {
            for event in events { output.out(TerminalText.json(jsonLine(event))) }
        } else {
            let rows = events.map { event in
                [event.at.rfc3339Milliseconds, event.kind, event.username ?? "-", event.chainID?.description ?? "-",
                 event.generation.map(String.init) ?? "-", event.ip ?? "-", event.userAgent ?? "-", event.deviceID ?? "-", event.detail]
            }
            let text = table(["AT", "KIND", "USER", "CHAIN", "GEN", "IP", "USER AGENT", "DEVICE", "DETAIL"], rows)
            output.out(header ? text : String(text.drop { $0 != "\n" }.dropFirst()))
        }
        fflush(nil)
    }

    /// One event as a JSON object, keys in a fixed order; `detail` is the stored object.
    static func jsonLine(_ event: AuditRecord) -> String {
        let fields: [(String, JSONValue)] = [
            ("at", .string(event.at.rfc3339Milliseconds)), ("kind", .string(event.kind)), ("username", .optional(event.username)),
            ("chain_id", .optional(event.chainID?.description)), ("generation", event.generation.map { .int(Int64($0)) } ?? .null),
            ("ip", .optional(event.ip)), ("user_agent", .optional(event.userAgent)), ("device_id", .optional(event.deviceID)),
        ]
        var line = "{"
        for (key, value) in fields {
            JSONValue.writeString(key, to: &line)
            line += ":" + value.text + ","
        }
        return line + "\"detail\":" + event.detail + "}"
    }
}

/// What one notification on the channel `baton_heads` says (docs/design.md, "Verify from
/// memory on PostgreSQL"). Pure: parsed and written here, acted on by `HeadWatch`.
///
/// - `c<id> [<id> …]`: the chains' rows changed (schema-postgresql.sql's trigger
///   `chains_announce` for one row, or the serving instance after its COMMIT for all the
///   rows its transaction changed).
/// - `*`: a user's name or disabled mark changed, or a table was truncated: every
///   remembered row may be stale.
/// - `w <instance> <tag>[ c<id> …| *]`: a serving instance's announcement of what its
///   committed transaction changed (none: nothing), sent after its COMMIT
///   (`HeadWatch.commitAnnouncing`). It is also that writer's round: the tag asks every
///   other instance to confirm it has applied everything announced up to it.
/// - `h <instance> <sequence> <round> [<instance>.<tag> …] [knowswritetags.1]`: an
///   instance's heartbeat. A round above 0 (a tag) asks every other instance to confirm it
///   has applied everything announced before it; the list confirms other instances' tags:
///   for each instance, the last of its tags (a round or a writer's) this one applied, in
///   the order announced. The last entry says the instance confirms writers' tags (an older
///   Baton, which confirms rounds only, sends none, and reads the entry as a confirmation
///   for an instance that cannot exist: names are at most 13 characters).
///
/// Anything else (a future format, a payload written by hand) reads as `.everything`, so
/// what cannot be understood forgets rather than trusts.
enum HeadAnnouncement: Equatable, Sendable {
    case chains([Int64])
    case everything
    case beat(Beat)
    case write(Write)

    /// A serving instance's announcement of one committed transaction, which is also its
    /// writer's round.
    struct Write: Equatable, Sendable {
        /// The announcing instance's name.
        var instance: String
        /// The writer's tag (above 0), unique within the instance, shared with its rounds.
        var tag: UInt64
        /// What changed: nil for nothing, `.chains` or `.everything`.
        var change: Change?
    }

    /// What a `Write` says changed.
    enum Change: Equatable, Sendable {
        case chains([Int64])
        case everything
    }

    /// One instance's heartbeat.
    struct Beat: Equatable, Sendable {
        /// The sending instance's name: letters and digits, chosen at random at start.
        var instance: String
        /// Counts the instance's heartbeats; the instance knows when it sent each one.
        var sequence: UInt64
        /// 0, or the number of a round the instance asks the others to confirm.
        var round: UInt64
        /// Tags of other instances this heartbeat confirms: instance → the last of its tags
        /// applied, in the order they were announced (not the highest number).
        var confirms: [String: UInt64]
        /// Whether the instance confirms writers' tags (`w`), not only rounds.
        var knowsWrites = true
    }

    /// The entry that marks a heartbeat whose instance confirms writers' tags.
    static let knowsWritesMark = "knowswritetags"

    /// PostgreSQL's limit for a payload is 8000 bytes; a heartbeat stays far below it as
    /// long as it confirms at most this many instances (more wait for the next heartbeat).
    static let maximumConfirmations = 200

    init(payload: String) {
        if payload == "*" {
            self = .everything
        } else if payload.first == "c", let ids = Self.ids(payload.dropFirst()) {
            self = .chains(ids)
        } else if let beat = Self.beat(payload) {
            self = .beat(beat)
        } else if let write = Self.write(payload) {
            self = .write(write)
        } else {
            self = .everything
        }
    }

    /// The notification's text.
    var payload: String {
        switch self {
        case .chains(let ids): return "c" + ids.map(String.init).joined(separator: " ")
        case .everything: return "*"
        case .beat(let beat):
            var text = "h \(beat.instance) \(beat.sequence) \(beat.round)"
            for (instance, round) in beat.confirms.sorted(by: { $0.key < $1.key }) { text += " \(instance).\(round)" }
            if beat.knowsWrites { text += " \(Self.knowsWritesMark).1" }
            return text
        case .write(let write):
            let prefix = Self.writePrefix(instance: write.instance, tag: write.tag)
            switch write.change {
            case nil: return prefix
            case .chains(let ids): return prefix + " " + HeadAnnouncement.chains(ids).payload
            case .everything: return prefix + " *"
            }
        }
    }

    /// The start of a `Write`'s payload, before what changed (`HeadWatch.commitAnnouncing`
    /// appends that on the server).
    static func writePrefix(instance: String, tag: UInt64) -> String { "w \(instance) \(tag)" }

    /// Room left in a payload for what changed after the longest `writePrefix` and its space.
    static let maximumChange = maximumPayload - 64

    /// Whether `name` can name an instance (and so be written in a payload unambiguously).
    static func isInstanceName(_ name: Substring) -> Bool {
        !name.isEmpty && name.count <= 32 && name.utf8.allSatisfy { (48...57).contains($0) || (97...122).contains($0) }
    }

    /// PostgreSQL refuses a payload of 8000 bytes or more.
    static let maximumPayload = 7999

    /// What to announce for a transaction's changes as the triggers listed them (`" 12 13 *"`:
    /// chain ids, `*` for a user) in the text expression `list`, as SQL computed by the
    /// server after the COMMIT (`HeadWatch.commitAnnouncing`): NULL for none, `*` when the
    /// list holds `*` or would not fit in one payload, otherwise `c` and the ids (a repeated
    /// id only repeats; text that is not ids reads back as everything).
    static func payloadSQL(of list: String, fitting limit: Int = maximumPayload) -> String {
        """
        CASE WHEN btrim(coalesce(\(list), '')) = '' THEN NULL \
        WHEN strpos(\(list), '*') > 0 OR octet_length(\(list)) > \(limit - 1) THEN '*' \
        ELSE 'c' || btrim(\(list)) END
        """
    }

    private static func ids(_ text: Substring) -> [Int64]? {
        let fields = text.split(separator: " ", omittingEmptySubsequences: false)
        var ids: [Int64] = []
        for field in fields {
            guard let id = Int64(field), id > 0 else { return nil }
            ids.append(id)
        }
        return ids.isEmpty ? nil : ids
    }

    private static func beat(_ payload: String) -> Beat? {
        let fields = payload.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0] == "h", isInstanceName(fields[1]),
              let sequence = UInt64(fields[2]), let round = UInt64(fields[3]) else { return nil }
        var confirms: [String: UInt64] = [:], knowsWrites = false
        for field in fields.dropFirst(4) {
            let parts = field.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, isInstanceName(parts[0]), let confirmed = UInt64(parts[1]) else { return nil }
            if parts[0] == knowsWritesMark {
                knowsWrites = true
            } else {
                confirms[String(parts[0])] = max(confirms[String(parts[0])] ?? 0, confirmed)
            }
        }
        return Beat(instance: String(fields[1]), sequence: sequence, round: round, confirms: confirms, knowsWrites: knowsWrites)
    }

    private static func write(_ payload: String) -> Write? {
        let fields = payload.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count >= 3, fields[0] == "w", isInstanceName(fields[1]), let tag = UInt64(fields[2]), tag > 0 else { return nil }
        guard fields.count == 4 else { return Write(instance: String(fields[1]), tag: tag, change: nil) }
        switch HeadAnnouncement(payload: String(fields[3])) {
        case .chains(let ids) where fields[3].first == "c": return Write(instance: String(fields[1]), tag: tag, change: .chains(ids))
        case .everything where fields[3] == "*": return Write(instance: String(fields[1]), tag: tag, change: .everything)
        default: return nil
        }
    }
}

/// What one notification on the channel `baton_heads` says (docs/design.md, "Verify from
/// memory on PostgreSQL"). Pure: parsed and written here, acted on by `HeadWatch`.
///
/// - `c<id> [<id> …]`: the chains' rows changed (schema-postgresql.sql's trigger
///   `chains_announce` for one row, or the serving instance after its COMMIT for all the
///   rows its transaction changed).
/// - `*`: a user's name or disabled mark changed, or a table was truncated: every
///   remembered row may be stale.
/// - `h <instance> <sequence> <round> [<instance>.<round> …]`: an instance's heartbeat. A
///   round above 0 asks every other instance to confirm it has applied everything
///   announced before it; the list confirms other instances' rounds.
///
/// Anything else (a future format, a payload written by hand) reads as `.everything`, so
/// what cannot be understood forgets rather than trusts.
enum HeadAnnouncement: Equatable, Sendable {
    case chains([Int64])
    case everything
    case beat(Beat)

    /// One instance's heartbeat.
    struct Beat: Equatable, Sendable {
        /// The sending instance's name: letters and digits, chosen at random at start.
        var instance: String
        /// Counts the instance's heartbeats; the instance knows when it sent each one.
        var sequence: UInt64
        /// 0, or the number of a round the instance asks the others to confirm.
        var round: UInt64
        /// Rounds of other instances this heartbeat confirms: instance → newest round applied.
        var confirms: [String: UInt64]
    }

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
            return text
        }
    }

    /// Whether `name` can name an instance (and so be written in a payload unambiguously).
    static func isInstanceName(_ name: Substring) -> Bool {
        !name.isEmpty && name.count <= 32 && name.utf8.allSatisfy { (48...57).contains($0) || (97...122).contains($0) }
    }

    /// PostgreSQL refuses a payload of 8000 bytes or more.
    static let maximumPayload = 7999

    /// What to announce for a transaction's changes as the triggers recorded them in the
    /// setting `baton.changed` (`" 12 13 *"`: chain ids, `*` for a user): nothing for none;
    /// everything for a user, for text that is not that, or for more ids than one payload holds.
    static func announcing(changed setting: String?) -> HeadAnnouncement? {
        let fields = (setting ?? "").split(separator: " ")
        guard !fields.isEmpty else { return nil }
        var ids: [Int64] = [], seen = Set<Int64>()
        for field in fields {
            guard let id = Int64(field), id > 0 else { return .everything }
            if seen.insert(id).inserted { ids.append(id) }
        }
        let announcement = HeadAnnouncement.chains(ids)
        return announcement.payload.utf8.count <= maximumPayload ? announcement : .everything
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
        var confirms: [String: UInt64] = [:]
        for field in fields.dropFirst(4) {
            let parts = field.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, isInstanceName(parts[0]), let confirmed = UInt64(parts[1]) else { return nil }
            confirms[String(parts[0])] = max(confirms[String(parts[0])] ?? 0, confirmed)
        }
        return Beat(instance: String(fields[1]), sequence: sequence, round: round, confirms: confirms)
    }
}

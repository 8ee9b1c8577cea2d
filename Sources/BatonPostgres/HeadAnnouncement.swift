/// What one notification on the channel `baton_heads` says (docs/design.md, "Verify from
/// memory on PostgreSQL"). Pure: parsed and written here, acted on by `HeadWatch`.
///
/// - `c<id>`: the chain's row changed (schema-postgresql.sql's trigger `chains_announce`).
/// - `*`: a user's name or disabled mark changed, or a table was truncated: every
///   remembered row may be stale.
/// - `h <instance> <sequence> <round> [<instance>.<round> …]`: an instance's heartbeat. A
///   round above 0 asks every other instance to confirm it has applied everything
///   announced before it; the list confirms other instances' rounds.
///
/// Anything else (a future format, a payload written by hand) reads as `.everything`, so
/// what cannot be understood forgets rather than trusts.
enum HeadAnnouncement: Equatable, Sendable {
    case chain(Int64)
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
        } else if payload.first == "c", let id = Int64(payload.dropFirst()), id > 0 {
            self = .chain(id)
        } else if let beat = Self.beat(payload) {
            self = .beat(beat)
        } else {
            self = .everything
        }
    }

    /// The notification's text.
    var payload: String {
        switch self {
        case .chain(let id): return "c\(id)"
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

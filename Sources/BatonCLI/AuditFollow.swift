import BatonStorage

/// Where `baton admin audit --follow` reads from next, and which events it has printed.
///
/// It reads a window of ids behind the newest event printed, skipping those printed: an audit
/// id is taken when the row is inserted, and on PostgreSQL a transaction can commit after
/// another that took a higher id (a `revoke --all` batch beside the server's exchanges), so
/// reading only after the newest id would never show it. Within the window such an event is
/// printed late rather than never. SQLite commits one writer at a time, in id order.
struct AuditFollow: Equatable {
    /// How many ids behind the newest printed one each read starts.
    static let window: Int64 = 1000

    /// The newest event id printed (or, before any, the newest in the trail).
    private(set) var newestID: Int64
    /// The ids printed inside the window.
    private var printed: Set<Int64>

    /// Starts after `newestID`, with `printed` the ids already shown (or otherwise not to show).
    init(newestID: Int64, printed: some Sequence<Int64>) {
        self.newestID = newestID
        self.printed = Set(printed)
    }

    /// The id the next read starts after.
    var readAfter: Int64 { max(0, newestID - Self.window) }

    /// The events of a read (oldest first) that were not printed yet; remembers them.
    mutating func unseen(_ events: [AuditRecord]) -> [AuditRecord] {
        let fresh = events.filter { !printed.contains($0.id) }
        printed.formUnion(fresh.map(\.id))
        newestID = max(newestID, fresh.map(\.id).max() ?? newestID)
        let floor = readAfter
        printed = printed.filter { $0 > floor }
        return fresh
    }
}

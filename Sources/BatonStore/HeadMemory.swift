import BatonCore
import BatonOperations
import CSystem
import Glibc
import Synchronization

/// The chains' committed rows that verify answers from, per thread, without a lock shared
/// between threads and without a database read (docs/design.md, "Verify from memory").
///
/// A remembered row is used only while all three hold:
/// - no commit this process did not make itself happened since the rows were known: the
///   WAL index's change key (`WALIndexWatch`) still equals `known`, which the writer
///   publishes after each of its own commits, before it acknowledges them;
/// - this process's writer wrote no row of that chain since the row was read: the writer
///   stamps every written chain with its commit's epoch (`stamps`, from SQLite's update
///   hook), before it acknowledges, and a row read at an earlier epoch is stale;
/// - nothing forgot everything since (`flushedAt`: a users row written, a foreign commit
///   seen by the writer, a failed commit).
/// Otherwise verify reads the database (fail closed). The writer thread is the only one that
/// stores into the shared words; verify threads only load them, and keep the rows in a table
/// they all read and fill without a lock (`SharedHeadTable`).
final class HeadMemory: @unchecked Sendable {
    /// What a thread may fill its table with: the epoch and change key its read must match.
    struct Ticket {
        var epoch: UInt64
        var key: UInt64
    }

    /// What `recall` found.
    enum Recall {
        case remembered(ChainRecord)
        /// Not in the table (or stale there): read, and remember.
        case absent
        /// The database changed in a way this process did not make or not record yet: read,
        /// and do not remember until the writer has caught up.
        case unknown
    }

    /// "The state is not known": a change key no header can have (a real one equal to it
    /// fails closed too).
    static let unknownKey = UInt64.max
    /// Power of two: chains share a stamp when their ids hash alike (a false "stale" only).
    private static let stampCount = 1 << 16

    private let watch: WALIndexWatch
    /// The rows, for every thread.
    let table: SharedHeadTable
    private let known = Atomic<UInt64>(unknownKey)
    private let epoch = Atomic<UInt64>(1)
    private let flushedAt = Atomic<UInt64>(1)
    private let stamps: UnsafeMutablePointer<UInt64>

    // The writer thread's own view (touched by the writer thread only).
    private var writerEpoch: UInt64 = 1
    private var writerKey: UInt64?
    private var changeBefore: UInt32 = 0

    /// nil when the writer connection has no WAL index: everything is then read from the database.
    init?(writer connection: Connection, table: SharedHeadTable) {
        guard let watch = WALIndexWatch(connection: connection) else { return nil }
        self.watch = watch
        self.table = table
        stamps = .allocate(capacity: Self.stampCount)
        stamps.initialize(repeating: 0, count: Self.stampCount)
    }

    deinit { stamps.deallocate() }

    /// The writer connection is closing: from now on every verify reads the database.
    func close() {
        known.store(Self.unknownKey, ordering: .releasing)
        watch.close()
    }

    // MARK: Verify threads

    /// The committed row of `chain` if it is remembered and provably current.
    func recall(_ chain: ChainID) -> Recall {
        let knownKey = known.load(ordering: .acquiring)
        guard knownKey != Self.unknownKey, watch.key() == knownKey else { return .unknown }
        guard let entry = table.entry(for: chain) else { return .absent }
        guard entry.epoch >= flushedAt.load(ordering: .acquiring),
              baton_load_acquire(stamps + Self.stampIndex(chain)) <= entry.epoch else {
            table.forget(chain)
            return .absent
        }
        return .remembered(entry.record)
    }

    /// Before a read that may fill the table: nil when the state is not known now.
    func ticket() -> Ticket? {
        let knownKey = known.load(ordering: .acquiring)
        let epoch = epoch.load(ordering: .acquiring)
        guard knownKey != Self.unknownKey, watch.key() == knownKey else { return nil }
        return Ticket(epoch: epoch, key: knownKey)
    }

    /// After the read: remembers `records` if no commit happened since `ticket` (so the read
    /// saw exactly the state the ticket names). A commit of this process's writer in between
    /// changes the WAL index too, so rows it wrote are never remembered from before it.
    func remember(_ records: [ChainRecord], readWith ticket: Ticket) {
        guard !records.isEmpty, watch.key() == ticket.key, known.load(ordering: .acquiring) == ticket.key else { return }
        for record in records {
            table.remember(SharedHeadTable.Entry(record: record, epoch: ticket.epoch), for: record.head.id)
        }
    }

    // MARK: The writer thread

    /// Inside a write transaction, holding SQLite's write lock (no other process can commit):
    /// any change since the writer's last commit was made elsewhere, so everything remembered
    /// is forgotten and the current state becomes the known one.
    ///
    /// A header that changed without a commit (`iChange` as the writer left it, not 0): a
    /// checkpoint restarted the WAL (`walRestartHdr` moves `mxFrame` and the salts only).
    /// The rows are still the committed ones, so the new key is adopted without forgetting.
    func writeBegan() {
        let current = watch.key()
        if current == nil || current != writerKey {
            let onlyRestarted = current.map(WALIndexWatch.changeCounter) == writerKey.map(WALIndexWatch.changeCounter)
                && current.map(WALIndexWatch.changeCounter) != 0
            if !onlyRestarted { advance(flushing: true) }
            writerKey = current
            known.store(current ?? Self.unknownKey, ordering: .releasing)
        }
        changeBefore = current.map(WALIndexWatch.changeCounter) ?? 0
    }

    /// After COMMIT, before any caller is answered: stamps the chains written (or forgets
    /// everything when a users row was written), then publishes the new change key if the
    /// header shows exactly this commit (`wroteFrames`: SQLite counts a commit only when it
    /// wrote frames); otherwise the state is unknown until the next write.
    func committed(chains: [Int64], usersChanged: Bool, wroteFrames: Bool) {
        // The stamps first, the epoch after them, the key last: a thread that loads the new
        // key (acquiring) sees the stamps and the epoch too.
        writerEpoch += 1
        let stamp = writerEpoch
        if usersChanged { flushedAt.store(stamp, ordering: .releasing) }
        for id in chains { baton_store_release(stamps + Self.stampIndex(ChainID(rawValue: id)), stamp) }
        epoch.store(stamp, ordering: .releasing)
        let after = watch.key()
        if writerKey != nil, let after, WALIndexWatch.changeCounter(of: after) == changeBefore &+ (wroteFrames ? 1 : 0) {
            writerKey = after
        } else {
            writerKey = nil
        }
        known.store(writerKey ?? Self.unknownKey, ordering: .releasing)
    }

    /// A write transaction failed (rolled back, or COMMIT's outcome unknown): forget
    /// everything; the next write learns the state again.
    func failed() {
        advance(flushing: true)
        writerKey = nil
        known.store(Self.unknownKey, ordering: .releasing)
    }

    /// Forgets every row remembered so far (their epochs are all below the new one).
    private func advance(flushing: Bool) {
        writerEpoch += 1
        if flushing { flushedAt.store(writerEpoch, ordering: .releasing) }
        epoch.store(writerEpoch, ordering: .releasing)
    }

    private static func stampIndex(_ chain: ChainID) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: chain.rawValue) &* 0x9E37_79B9_7F4A_7C15) >> 48)
    }
}


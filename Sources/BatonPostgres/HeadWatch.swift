import BatonCore
import BatonOperations
import BatonSync
import CSystem
import Glibc
import Synchronization

/// Verify from memory on PostgreSQL, and the barrier that keeps it exact (docs/design.md,
/// "Verify from memory on PostgreSQL").
///
/// The database announces every change to a chain's row (and `*` for a user's name or
/// disabled mark) on the channel `baton_heads`, after commit and in commit order
/// (schema-postgresql.sql's triggers). One thread per instance listens on its own connection:
/// - A chain's announcement stamps the chain, so rows read before it are stale; `*`, or
///   a lost connection, forgets everything.
/// - Every `beatInterval` it sends a heartbeat on the channel. Its own heartbeat coming
///   back proves everything committed before it was sent has been applied, so memory is
///   trusted until `bound` after that send (`freshUntil`) and no longer: an instance whose
///   heartbeats stop coming back reads the database for every verify.
/// - A write that changed a chain or a user is answered only after its commit is applied by
///   every instance (`awaitApplied`): its announcement, sent after its COMMIT with the
///   writer's tag, is its round. Once it came back, every instance heard within `bound`
///   confirms it in a heartbeat (naming the last of this instance's tags it applied). One
///   that does not confirm can trust nothing older than `bound`, so waiting `bound` after the
///   commit is enough for it, and is the most any write waits. A writer whose announcement
///   may have been missed (the listener reconnected) gets a round: a heartbeat with a tag.
///
/// Verify threads only load the shared words (`freshUntil`, `epoch`, `flushedAt`, the
/// stamps) and keep rows in one table they all read and fill without a lock
/// (`SharedHeadTable`); the listening thread is the only one that stores the shared words.
final class HeadWatch: @unchecked Sendable {
    /// The channel the triggers and the heartbeats use.
    static let channel = "baton_heads"
    /// How long memory is trusted after the last heartbeat that came back, and so the longest
    /// a write waits for an instance that does not confirm it.
    static let bound: Duration = .milliseconds(100)
    /// How often an instance sends a heartbeat when nothing else makes it send one.
    static let beatInterval: Duration = .milliseconds(20)
    /// The `application_name` of the listening connection (`pg_stat_activity`).
    static let applicationName = "baton-heads"
    private static let boundNanoseconds = UInt64(bound.components.seconds) * 1_000_000_000 + UInt64(bound.components.attoseconds / 1_000_000_000)
    private static let intervalNanoseconds = UInt64(beatInterval.components.attoseconds / 1_000_000_000) + UInt64(beatInterval.components.seconds) * 1_000_000_000
    /// An instance not heard for this long is dropped from the list of instances (it could
    /// trust nothing older than `bound` long ago anyway).
    private static let forgetPeerNanoseconds: UInt64 = 10_000_000_000
    /// The longest a row is trusted after it was read, announced changes or not: the bound
    /// on a change whose announcement was lost with its instance (docs/design.md).
    static let rowLifetime: Duration = .seconds(10)
    private static let rowLifetimeNanoseconds = UInt64(rowLifetime.components.seconds) * 1_000_000_000
    /// Power of two: chains share a stamp when their ids hash alike (a false "stale" only).
    private static let stampCount = 1 << 16

    /// This instance's name in heartbeats.
    let instance: String
    /// The remembered rows; nil: nothing is remembered (the barrier still runs).
    let table: SharedHeadTable?
    private let uri: String
    private let statementTimeout: Duration

    // Shared words: stored by the listening thread only.
    private let freshUntil = Atomic<UInt64>(0)
    private let epoch = Atomic<UInt64>(1)
    private let flushedAt = Atomic<UInt64>(1)
    private let stamps: UnsafeMutablePointer<UInt64>

    // The barrier's state, guarded by `lock`.
    private let lock = ConditionLock()
    private var listeningSince: UInt64?
    private var roundsWanted: UInt64 = 0
    private var roundsSent: UInt64 = 0
    private var roundsApplied: UInt64 = 0
    /// The rounds lately marked applied, in order, each with whether it settled with an
    /// instance silent (a writer's outcome is that of the first at or above its round).
    private var roundsSettled: [(number: UInt64, silently: Bool)] = []
    /// Whether an instance heard lately has not shown it confirms writers' announcements
    /// (an older Baton during a rolling upgrade confirms rounds only): writers then send a
    /// round as well.
    private var olderPeerHeard = false
    /// The last tag given out; writers' announcements and rounds share the numbers.
    private var lastTag: UInt64 = 0
    /// Writers waiting, by tag: `.waiting` until their announcement came back and every
    /// instance awaited confirmed it (`.confirmed`) or some stayed silent for `bound`.
    private var writers: [UInt64: WriteState] = [:]
    private var isStopped = false
    private var listenCount = 0
    /// A commit may stand that was not announced: the next heartbeat announces everything.
    private var owesEverything = false
    private var counts = Counts()
    /// Readable when a round is wanted or the watch stops: wakes the listening thread.
    private let wake: Int32

    /// Writes that waited, by how their wait ended.
    struct Counts: Equatable, Sendable {
        /// Every instance confirmed.
        var confirmed = 0
        /// Its announcement came back, and an instance heard lately did not confirm it within
        /// `bound` of when it was last heard (it can trust nothing from before by then).
        var peerSilent = 0
        /// `bound` passed first (this instance's listener behind or not listening).
        var waitedOut = 0
    }

    /// Where a writer's announcement stands.
    private enum WriteState {
        case waiting, confirmed, peerSilent
    }

    /// Starts the listening thread; memory is trusted once its first heartbeat came back.
    init(uri: String, statementTimeout: Duration, table: SharedHeadTable?) {
        self.uri = uri
        self.statementTimeout = statementTimeout
        self.table = table
        instance = String(SecureRandom.uint64(), radix: 36)
        stamps = .allocate(capacity: Self.stampCount)
        stamps.initialize(repeating: 0, count: Self.stampCount)
        wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        spawn(stackSize: nil) { [self] in listen() }
    }

    deinit {
        stamps.deallocate()
        Glibc.close(wake)
    }

    /// Stops the listening thread; from now on nothing is trusted and writes wait out `bound`.
    func stop() {
        freshUntil.store(0, ordering: .releasing)
        lock.withLock {
            isStopped = true
            lock.broadcast()
        }
        signalWake()
    }

    /// How many times the listener began listening (a connection made and `LISTEN` run).
    var listens: Int { lock.withLock { listenCount } }

    /// Whether memory is trusted now (its last heartbeat came back within `bound`).
    var isFresh: Bool { Self.now() < freshUntil.load(ordering: .acquiring) }

    /// How writes' waits ended so far.
    var waitCounts: Counts { lock.withLock { counts } }

    /// Whether an instance heard lately has not shown that it confirms writers'
    /// announcements, so that writers send rounds as well (an older Baton's heartbeats).
    var hearsOlderInstance: Bool { lock.withLock { olderPeerHeard } }

    // MARK: Verify threads

    /// The committed row of `chain` if it is remembered and no announcement since
    /// made it stale; nil: read the database.
    func recall(_ chain: ChainID) -> ChainRecord? {
        let now = Self.now()
        guard let table, now < freshUntil.load(ordering: .acquiring), let entry = table.entry(for: chain) else { return nil }
        guard entry.epoch >= flushedAt.load(ordering: .acquiring), now < entry.readAt + Self.rowLifetimeNanoseconds,
              baton_load_acquire(stamps + Self.stampIndex(chain)) <= entry.epoch else {
            table.forget(chain)
            return nil
        }
        return entry.record
    }

    /// Before a read that may fill the table: the epoch to tag its rows with, and when;
    /// nil when memory is not trusted now (the rows are then not remembered).
    func ticket() -> (epoch: UInt64, at: UInt64)? {
        guard table != nil else { return nil }
        let epoch = epoch.load(ordering: .acquiring)
        let now = Self.now()
        return now < freshUntil.load(ordering: .acquiring) ? (epoch, now) : nil
    }

    /// After the read: remembers `records`, tagged with `ticket`. A change committed after the
    /// read's snapshot is announced later, so its stamp is above the ticket and the row stale.
    func remember(_ records: [ChainRecord], ticket: (epoch: UInt64, at: UInt64)) {
        guard let table else { return }
        for record in records {
            table.remember(SharedHeadTable.Entry(record: record, epoch: ticket.epoch, readAt: ticket.at), for: record.head.id)
        }
    }

    // MARK: Writers

    /// What a writer's announcement carries and its wait needs: the tag, and which of the
    /// listener's connections could receive the announcement (nil: none was listening).
    struct WriteTicket: Sendable {
        let tag: UInt64
        let listen: Int?
    }

    /// Before a commit that may change a chain or a user: the writer's ticket, whose tag its
    /// announcement carries (`commitAnnouncing`). `abandon` it if the commit fails, or wait
    /// with `awaitApplied(_:committedAt:)` once it returned.
    func issueTicket() -> WriteTicket {
        lock.withLock {
            lastTag += 1
            writers[lastTag] = .waiting
            return WriteTicket(tag: lastTag, listen: listeningSince == nil || isStopped ? nil : listenCount)
        }
    }

    /// The writer's commit failed: it waits for nothing.
    func abandon(_ ticket: WriteTicket) {
        _ = lock.withLock { writers.removeValue(forKey: ticket.tag) }
    }

    /// After a commit announced with `ticket` (`committedAt`: when its COMMIT returned):
    /// returns once every instance applied it, or once `bound` passed since. Its announcement
    /// coming back is its round. A round is sent as well when the listener reconnected since
    /// the ticket (the announcement may have arrived while it was not listening), or when an
    /// instance heard lately may not confirm writers' announcements (an older Baton).
    func awaitApplied(_ ticket: WriteTicket, committedAt: UInt64) {
        let deadline = committedAt + Self.boundNanoseconds
        lock.withLock {
            defer { writers[ticket.tag] = nil }
            var round: UInt64?
            while true {
                if let state = writers[ticket.tag], state != .waiting {
                    count(state)
                    return
                }
                if let round, roundsApplied >= round {
                    count(roundOutcome(round))
                    return
                }
                if round == nil, listeningSince != nil, !isStopped, listenCount != ticket.listen || olderPeerHeard {
                    round = roundsSent + 1  // a round sent after this commit
                    roundsWanted = max(roundsWanted, roundsSent + 1)
                    signalWake()
                }
                let now = Self.now()
                guard now < deadline else {
                    counts.waitedOut += 1
                    return
                }
                lock.wait(milliseconds: Int((deadline - now) / 1_000_000) + 1)
            }
        }
    }

    /// How the first round at or above `round` settled (under `lock`; confirmed when it is
    /// no longer listed).
    private func roundOutcome(_ round: UInt64) -> WriteState {
        roundsSettled.first { $0.number >= round }?.silently == true ? .peerSilent : .confirmed
    }

    /// Counts a wait that the listener settled (under `lock`).
    private func count(_ state: WriteState) {
        switch state {
        case .waiting: break
        case .confirmed: counts.confirmed += 1
        case .peerSilent: counts.peerSilent += 1
        }
    }

    /// What a process without a watch (the admin command line) does after such a commit: it
    /// cannot learn who confirmed, so it waits out `bound`.
    static func waitOutBound(committedAt: UInt64) {
        let deadline = committedAt + boundNanoseconds
        while true {
            let now = now()
            guard now < deadline else { return }
            var pause = timespec(tv_sec: 0, tv_nsec: Int(deadline - now))
            nanosleep(&pause, nil)
        }
    }

    /// A change may have committed without its announcement (the statement after COMMIT
    /// failed): the listener announces everything with its next heartbeat, whenever it can.
    func announceEverything() {
        lock.withLock { owesEverything = true }
        signalWake()
    }

    /// The statement that announces `payload` (any text: it is a parameter) as
    /// `unsyncedNotify` does: for payloads that differ every time, one prepared statement.
    static func unsyncedNotifyStatement(_ payload: String) -> PostgresStatement {
        PostgresStatement(unsyncedNotify(payloadSQL: "$1::text"), [payload])
    }

    /// The statement that announces `payload` (Baton's own text: no quotes in it) in a
    /// transaction of its own whose commit is not flushed nor sent to a synchronous standby
    /// before it returns. PostgreSQL gives every notifying transaction an XID and holds its
    /// notification lock (one for the whole cluster) from before its commit until after it,
    /// so a flushed one holds every other notifying commit for a flush and the standby's
    /// answer. A notification needs neither: it is delivered when committed, and lost with
    /// the server anyway (the listeners then reconnect and forget everything).
    static func unsyncedNotify(_ payload: String) -> String { unsyncedNotify(payloadSQL: "'\(payload)'") }

    /// `unsyncedNotify` of the text the SQL expression `payloadSQL` gives.
    private static func unsyncedNotify(payloadSQL: String) -> String {
        "SELECT set_config('synchronous_commit', 'off', true), pg_notify('\(channel)', \(payloadSQL))"
    }

    /// A serving instance's COMMIT of a transaction that may have changed a chain or a user,
    /// with its announcement: the triggers' list (`baton.changed`, which ends with the
    /// transaction) copied into a session setting that outlives a COMMIT (`set_config(…,
    /// false)`; a rollback would undo it), the COMMIT, then the announcement in a
    /// transaction of its own (`unsyncedNotify`): `w <instance> <tag>` and that list
    /// (`HeadAnnouncement.payloadSQL`; nothing after the tag for an empty list, which is
    /// still the writer's round). Sent in one pipeline: the server runs the last statement
    /// only if the COMMIT succeeded. The tag is a parameter, so the text is prepared once.
    static func commitAnnouncing(instance: String, ticket: WriteTicket) -> [PostgresStatement] {
        [
            PostgresStatement(copyChangesSQL),
            PostgresStatement("COMMIT"),
            PostgresStatement(announceCommittedSQL, [HeadAnnouncement.writePrefix(instance: instance, tag: ticket.tag)]),
        ]
    }

    /// `commitAnnouncing`'s copy of the triggers' list, and its announcement: texts made once
    /// (every commit that may change a chain sends them).
    private static let copyChangesSQL = "SELECT set_config('baton.committed', coalesce(current_setting('baton.changed', true), ''), false)"
    private static let announceCommittedSQL: String = {
        let change = HeadAnnouncement.payloadSQL(of: "current_setting('baton.committed')", fitting: HeadAnnouncement.maximumChange)
        return unsyncedNotify(payloadSQL: "$1::text || coalesce(' ' || (\(change)), '')")
    }()

    /// How many rounds may be on their way at once (`step`).
    static let roundsOnTheirWay = 2

    /// Monotonic nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    // MARK: The listening thread

    /// Another instance, as this one last heard it.
    private struct Peer {
        var heardAt: UInt64
        /// The position (in this connection's notifications) of the last of this
        /// instance's tags it confirmed: it applied everything up to there.
        var confirmed: UInt64
        /// Its heartbeats say it confirms writers' tags (an older Baton reads writers'
        /// announcements as `*` and confirms rounds only).
        var knowsWrites = false
    }

    /// A tag of this instance (a writer's announcement or a round) that came back: where,
    /// when, and whom it waits for (each with when it was last heard).
    private struct Returned {
        var tag: UInt64
        /// 0 for a writer's tag; a round's number otherwise.
        var round: UInt64
        var position: UInt64
        var returnedAt: UInt64
        var awaited: [String: UInt64]
    }

    /// The listening thread's own state.
    private struct Listener {
        var connection: PostgresConnection?
        var since: UInt64 = 0
        var sequence: UInt64 = 0
        var sentAt: [UInt64: UInt64] = [:]
        var lastSentAt: UInt64 = 0
        var peers: [String: Peer] = [:]
        /// Per instance, the last of its tags applied, still to be confirmed to it.
        var owed: [String: UInt64] = [:]
        /// Rounds sent and not back yet: heartbeat sequence → (round, tag).
        var roundsOut: [UInt64: (number: UInt64, tag: UInt64)] = [:]
        /// Own tags back and not yet confirmed by everyone awaited, in the order they came.
        var returned: [Returned] = []
        /// Where each own tag came back, while a confirmation naming it may still matter.
        var positions: [UInt64: UInt64] = [:]
        /// Notifications received on this connection.
        var received: UInt64 = 0
        var epoch: UInt64 = 1
    }

    private func listen() {
        var state = Listener()
        while !lock.withLock({ isStopped }) {
            do throws(PostgresError) {
                if state.connection == nil { try connect(&state) }
                try step(&state)
            } catch {
                disconnect(&state)
                pause(milliseconds: 100)
            }
        }
        state.connection?.close()
    }

    /// Connects and listens; everything remembered before is forgotten (announcements were
    /// missed while not listening).
    private func connect(_ state: inout Listener) throws(PostgresError) {
        // Its statements only notify: their commits need no flush (see `unsyncedNotify`).
        let connection = try PostgresConnection(uri: uri, statementTimeout: statementTimeout, applicationName: Self.applicationName,
                                                settings: ["SET synchronous_commit = off"])
        try connection.execute("LISTEN \(Self.channel)")
        state.epoch = epoch.load(ordering: .relaxed) + 1
        flushedAt.store(state.epoch, ordering: .releasing)
        epoch.store(state.epoch, ordering: .releasing)
        // The heartbeats' numbers go on from the last connection's: a heartbeat of that one
        // still committing after the reconnect must not pass for one of this connection's.
        state = Listener(connection: connection, since: Self.now(), sequence: state.sequence, epoch: state.epoch)
        lock.withLock {
            listenCount += 1
            listeningSince = state.since
            // Rounds sent before are not coming back: waiters get a new one (never a number
            // used before, whose late confirmations could be taken for the new one's).
            if roundsWanted > roundsApplied { roundsWanted = max(roundsWanted, roundsSent + 1) }
            // Writers whose announcements may have been missed ask for a round.
            lock.broadcast()
        }
    }

    private func disconnect(_ state: inout Listener) {
        freshUntil.store(0, ordering: .releasing)
        state.connection?.close()
        state.connection = nil
        lock.withLock { listeningSince = nil }
    }

    /// Sends a heartbeat if one is due, then applies what arrives until the next is due.
    private func step(_ state: inout Listener) throws(PostgresError) {
        guard let connection = state.connection else { return }
        let now = Self.now()
        // Own heartbeats not coming back for long: the connection is presumed dead.
        if let oldest = state.sentAt.values.min(), now - oldest > 4 * Self.boundNanoseconds {
            throw PostgresError(message: "heartbeats did not come back", isConnectionLost: true)
        }
        // At most two rounds on their way: the writers that arrive meanwhile share the next,
        // so a burst of commits costs a few heartbeats, not one per commit (each is a
        // notification every instance's listener wakes for). Two, not one: a writer whose
        // commit returns just after a round left gets the second at once, rather than waiting
        // for the first to come back before its own is sent.
        let (round, everything): ((number: UInt64, tag: UInt64)?, Bool) = lock.withLock {
            defer { owesEverything = false }
            guard roundsWanted > roundsSent, state.roundsOut.count < Self.roundsOnTheirWay else { return (nil, owesEverything) }
            roundsSent = roundsWanted
            lastTag += 1
            return ((roundsSent, lastTag), owesEverything)
        }
        if everything {
            do throws(PostgresError) { try connection.query("SELECT pg_notify($1, '*')", [Self.channel]) } catch {
                announceEverything()  // still owed after reconnecting
                throw error
            }
        }
        // Confirmations wait while two heartbeats are on their way, for the same reason: one
        // heartbeat then confirms a burst of other instances' announcements.
        let confirming = !state.owed.isEmpty && state.sentAt.count < Self.roundsOnTheirWay
        if round != nil || confirming || now - state.lastSentAt >= Self.intervalNanoseconds {
            try sendBeat(&state, round: round, connection)
        }
        let due = state.lastSentAt + Self.intervalNanoseconds, current = Self.now()
        let wait = Int32((current >= due ? 0 : min(Self.intervalNanoseconds, due - current)) / 1_000_000)
        let payloads = try connection.notifications(on: Self.channel, waitingUpTo: max(wait, 1), orUntilReadable: wake)
        drainWake()
        if !payloads.isEmpty { apply(payloads, &state) }
        settleRounds(&state)
    }

    private func sendBeat(_ state: inout Listener, round: (number: UInt64, tag: UInt64)?, _ connection: PostgresConnection) throws(PostgresError) {
        state.sequence += 1
        var confirms: [String: UInt64] = [:]
        for (instance, confirmed) in state.owed.prefix(HeadAnnouncement.maximumConfirmations) {
            confirms[instance] = confirmed
            state.owed[instance] = nil
        }
        let beat = HeadAnnouncement.beat(.init(instance: instance, sequence: state.sequence, round: round?.tag ?? 0, confirms: confirms))
        let sentAt = Self.now()
        state.sentAt[state.sequence] = sentAt
        state.lastSentAt = sentAt
        if let round { state.roundsOut[state.sequence] = round }
        try connection.query("SELECT pg_notify($1, $2)", [Self.channel, beat.payload])
    }

    /// Applies one batch of announcements, in order: stamps, then the epoch, then freshness.
    private func apply(_ payloads: [String], _ state: inout Listener) {
        let now = Self.now()
        let next = state.epoch + 1
        var changed = false
        var freshSentAt: UInt64?
        func stamp(_ ids: [Int64]) {
            for id in ids { baton_store_release(stamps + Self.stampIndex(ChainID(rawValue: id)), next) }
            changed = true
        }
        func forgetEverything() {
            flushedAt.store(next, ordering: .releasing)
            changed = true
        }
        func cameBack(tag: UInt64, round: UInt64) {
            let awaited = state.peers.filter { now - $0.value.heardAt <= Self.boundNanoseconds }.mapValues(\.heardAt)
            state.returned.append(Returned(tag: tag, round: round, position: state.received, returnedAt: now, awaited: awaited))
            state.positions[tag] = state.received
        }
        func heard(_ peer: String) -> Peer {
            var heard = state.peers[peer] ?? Peer(heardAt: now, confirmed: 0)
            heard.heardAt = now
            return heard
        }
        for payload in payloads {
            state.received += 1
            switch HeadAnnouncement(payload: payload) {
            case .chains(let ids):
                stamp(ids)
            case .everything:
                forgetEverything()
            case .write(let write):
                switch write.change {
                case .chains(let ids): stamp(ids)
                case .everything: forgetEverything()
                case nil: break
                }
                if write.instance == instance {
                    cameBack(tag: write.tag, round: 0)
                } else {
                    // Not heard by this: only an instance's heartbeats show that it listens and
                    // so may trust memory (its writes go on while its listener is down).
                    state.owed[write.instance] = write.tag  // the last in order, not the highest
                }
            case .beat(let beat) where beat.instance == instance:
                if let sentAt = state.sentAt[beat.sequence] {
                    freshSentAt = max(freshSentAt ?? 0, sentAt)
                    state.sentAt = state.sentAt.filter { $0.key > beat.sequence }
                }
                if beat.round > 0, let round = state.roundsOut.removeValue(forKey: beat.sequence) {
                    cameBack(tag: round.tag, round: round.number)
                }
            case .beat(let beat):
                var peer = heard(beat.instance)
                // A tag not known here came back before this connection listened: it
                // confirms nothing still waiting.
                if let confirmed = beat.confirms[instance], let position = state.positions[confirmed] {
                    peer.confirmed = max(peer.confirmed, position)
                }
                peer.knowsWrites = beat.knowsWrites
                state.peers[beat.instance] = peer
                if beat.round > 0 { state.owed[beat.instance] = beat.round }
            }
        }
        if changed {
            state.epoch = next
            epoch.store(next, ordering: .releasing)
        }
        if let freshSentAt { freshUntil.store(freshSentAt + Self.boundNanoseconds, ordering: .releasing) }
        state.peers = state.peers.filter { now - $0.value.heardAt < Self.forgetPeerNanoseconds }
        let older = state.peers.values.contains { now - $0.heardAt <= Self.boundNanoseconds && !$0.knowsWrites }
        lock.withLock {
            // Writers already waiting send a round now.
            if older, !olderPeerHeard { lock.broadcast() }
            olderPeerHeard = older
        }
    }

    /// Marks applied every tag that came back, oldest first, that every instance it waits for
    /// confirmed (at its position or later), or whose silent instances can trust nothing
    /// older than `bound` any more; and not before `bound` after this connection began
    /// listening (an instance last heard before that is unknown here).
    private func settleRounds(_ state: inout Listener) {
        let now = Self.now()
        var applied: [(number: UInt64, silently: Bool)] = []
        var settled: [(tag: UInt64, how: WriteState)] = []
        while let first = state.returned.first {
            guard now >= state.since + Self.boundNanoseconds else { break }
            let unconfirmed = first.awaited.filter { (state.peers[$0.key]?.confirmed ?? 0) < first.position }
            guard !unconfirmed.contains(where: { now < $0.value + Self.boundNanoseconds }) else { break }
            if first.round > 0 {
                applied.append((first.round, !unconfirmed.isEmpty))
            } else {
                settled.append((first.tag, unconfirmed.isEmpty ? .confirmed : .peerSilent))
            }
            state.returned.removeFirst()
        }
        guard !applied.isEmpty || !settled.isEmpty else { return }
        // A confirmation naming a tag before the oldest still waiting confirms nothing new.
        let oldest = state.returned.first?.position ?? .max
        state.positions = state.positions.filter { $0.value >= oldest }
        lock.withLock {
            if let last = applied.last {
                roundsApplied = max(roundsApplied, last.number)
                roundsSettled = Array((roundsSettled + applied).suffix(64))
            }
            for (tag, how) in settled where writers[tag] != nil { writers[tag] = how }
        }
        // Woken after the mutex is free, so the writers do not wake only to wait for it.
        lock.broadcast()
    }

    private func signalWake() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    private func drainWake() {
        var value: UInt64 = 0
        _ = read(wake, &value, 8)
    }

    private func pause(milliseconds: Int) {
        lock.withLock { if !isStopped { lock.wait(milliseconds: milliseconds) } }
    }

    private static func stampIndex(_ chain: ChainID) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: chain.rawValue) &* 0x9E37_79B9_7F4A_7C15) >> 48)
    }
}

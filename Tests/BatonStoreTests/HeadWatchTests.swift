@testable import BatonCore
@testable import BatonPostgres
@testable import BatonOperations
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Verify from memory on PostgreSQL (`HeadWatch`, docs/design.md): two real instances on one
/// database; a change made on one is seen by the other's very next verify once the change
/// returned, from memory or not; and an instance that stops hearing the database trusts
/// nothing it remembers.
@Suite(.serialized)
struct HeadWatchTests {
    /// One change made on instance B to a chain instance A remembers.
    enum Change: String, CaseIterable, CustomStringConvertible, Sendable {
        case exchange, revokeUser, logout, disableUser
        var description: String { rawValue }
    }

    @Test func verifyAnswersFromMemoryOnceTheListenerIsCurrent() async throws {
        let database = try await BackendDatabase(.postgresql)
        let store = try #require(database.store.base as? PostgresStore)
        try await Self.awaitFresh(store)
        let bundle = try database.login()
        #expect(store.recalledChain(bundle.chainID) == nil)
        let found = try Self.rememberedByVerifying(store, bundle)
        let remembered = try #require(found)
        #expect(remembered.head.generation == bundle.generation)
        try await Self.awaitCondition("the metric says memory is trusted") {
            store.storageMetricsText().contains("baton_postgres_memory_trusted 1")
        }
    }

    /// Twelve rounds per change: A remembers the chain, B changes it, and as soon as B's call
    /// returned A neither recalls the row nor accepts the old token.
    ///
    /// Run once (2026-11-26) against a deliberately stale build whose writes did not wait
    /// for the other instances (`PostgresStore.awaitApplied` returning at once), this failed
    /// for exchange, revokeUser and logout: A still recalled the row in 2, 2 and 4 of 12
    /// rounds, and accepted the old token in 1, 1 and 3. With that build's listener also
    /// applying announcements 5 ms late, A recalled the row in 10, 10, 8 and 8 of 12 rounds
    /// (disableUser included). The real build with the slow listener passed.
    @Test(arguments: Change.allCases)
    func aChangeOnAnotherInstanceIsSeenByTheNextVerifyOnceItReturned(_ change: Change) async throws {
        let (database, first, second) = try await Self.twoInstances()
        defer { second.close() }
        var remembered = 0, recalledAfter = 0, acceptedAfter = 0
        for round in 0..<12 {
            let user = "user\(round)"
            let bundle = try database.login(user)
            if try Self.verifyUntilRemembered(first, bundle) { remembered += 1 }
            switch change {
            case .exchange: _ = try second.exchange(bundle.token, context: RequestContext())
            case .revokeUser: _ = try second.revokeChains(ofUser: user, note: nil, context: .admin)
            case .logout: try second.logout(bundle.token, context: RequestContext())
            case .disableUser: _ = try second.setDisabled(user, true, context: .admin)
            }
            if first.recalledChain(bundle.chainID) != nil { recalledAfter += 1 }
            if (try? first.verify(bundle.token)) != nil { acceptedAfter += 1 }
        }
        #expect(remembered == 12, "A remembered the chain in only \(remembered) of 12 rounds")
        #expect(recalledAfter == 0, "\(recalledAfter) of 12 rounds: A still recalled the row after B's \(change) returned")
        #expect(acceptedAfter == 0, "\(acceptedAfter) of 12 rounds: A accepted the old token after B's \(change) returned")
        let waits = second.heads?.waitCounts ?? .init()
        #expect(waits.confirmed + waits.peerSilent + waits.waitedOut >= 12, "every change waited for A: \(waits)")
    }

    /// A write's own announcement is its round: a lone instance's exchanges are each
    /// announced once, with their writer's tag, they return confirmed (nothing to wait for but
    /// their own announcements coming back), and the instance sends no round heartbeat.
    /// The build before this (a heartbeat round sent after each commit) sent 12 rounds here.
    @Test func aLoneInstancesWritesAreTheirOwnRounds() async throws {
        let (database, store, heads) = try await Self.oneInstance()
        let bundles = try (0..<12).map { try database.login("user\($0)") }
        // Writes end at least `bound` after the listener began: none of the next is early.
        _ = try store.exchange(try database.login("warm-up").token, context: RequestContext())
        let observer = try PostgresConnection(uri: database.location, statementTimeout: .seconds(5))
        defer { observer.close() }
        try observer.execute("LISTEN \(HeadWatch.channel)")
        let before = heads.waitCounts
        for bundle in bundles { _ = try store.exchange(bundle.token, context: RequestContext()) }
        // All 12 on a quiet machine; a listener stalled past the bound under load waits out one.
        #expect(heads.waitCounts.confirmed >= before.confirmed + 10, "\(before) -> \(heads.waitCounts)")
        #expect(heads.waitCounts.peerSilent == before.peerSilent, "no other instance to wait for")

        var writes: [HeadAnnouncement.Write] = [], rounds = 0
        let deadline = ContinuousClock.now + .seconds(5)
        while writes.count < 12, ContinuousClock.now < deadline {
            for payload in try observer.notifications(on: HeadWatch.channel, waitingUpTo: 100, orUntilReadable: -1) {
                switch HeadAnnouncement(payload: payload) {
                case .write(let write) where write.instance == heads.instance: writes.append(write)
                case .beat(let beat) where beat.instance == heads.instance && beat.round > 0: rounds += 1
                default: break
                }
            }
        }
        #expect(writes.count == 12)
        #expect(Set(writes.map(\.tag)).count == writes.count, "every write has its own tag")
        #expect(Set(writes.compactMap { if case .chains(let ids) = $0.change { ids } else { nil } }.joined()) == Set(bundles.map(\.chainID.rawValue)))
        #expect(rounds == 0, "round heartbeats beside the writes' own announcements")
    }

    /// B's writes wait for A's confirmation of their announcements, which comes in A's
    /// heartbeats (naming the last of B's tags A applied): nearly all of them end confirmed
    /// by A (all of them on a quiet machine), not settled by A's silence. A build that took
    /// A's confirmations for nothing had 0 of 12 confirmed (5 counted so before `peerSilent`).
    /// B sends no rounds: A's heartbeats say it confirms writers' tags.
    @Test func anotherInstanceConfirmsAWritersAnnouncement() async throws {
        let (database, first, second) = try await Self.twoInstances()
        defer { second.close() }
        let bundles = try (0..<12).map { try database.login("user\($0)") }
        _ = try second.exchange(try database.login("warm-up").token, context: RequestContext())
        let observer = try PostgresConnection(uri: database.location, statementTimeout: .seconds(5))
        defer { observer.close() }
        try observer.execute("LISTEN \(HeadWatch.channel)")
        let before = try #require(second.heads).waitCounts
        for bundle in bundles {
            #expect(try Self.verifyUntilRemembered(first, bundle))
            _ = try second.exchange(bundle.token, context: RequestContext())
            #expect(first.recalledChain(bundle.chainID) == nil)
        }
        let after = try #require(second.heads).waitCounts
        #expect(after.confirmed + after.peerSilent + after.waitedOut == before.confirmed + before.peerSilent + before.waitedOut + 12)
        #expect(after.confirmed - before.confirmed >= 10, "confirmed by A: \(after.confirmed - before.confirmed) of 12")
        #expect(!(second.heads?.hearsOlderInstance ?? true))
        let payloads = try Self.notifications(on: observer, until: "end of the writes", database: database)
        let rounds = payloads.filter {
            if case .beat(let beat) = HeadAnnouncement(payload: $0) { beat.instance == second.heads?.instance && beat.round > 0 } else { false }
        }
        #expect(rounds.isEmpty, "B sent rounds: \(rounds)")
    }

    /// What `observer` (listening on the channel) received, up to `marker`, which is
    /// announced now: everything announced before.
    static func notifications(on observer: PostgresConnection, until marker: String, database: BackendDatabase) throws -> [String] {
        _ = try database.rows("SELECT pg_notify('\(HeadWatch.channel)', '\(marker)')")
        var arrived: [String] = []
        while !arrived.contains(marker) {
            let batch = try observer.notifications(on: HeadWatch.channel, waitingUpTo: 5000, orUntilReadable: -1)
            guard !batch.isEmpty else { break }
            arrived += batch
        }
        return arrived
    }

    /// A rolling upgrade: beside an instance of the previous release, whose heartbeats
    /// confirm only rounds (the highest round number it heard of each instance) and which
    /// reads a writer's announcement as `*`, a writer also sends a round, which the older
    /// instance confirms, so its writes end confirmed. A build without that round had 0 of 8
    /// confirmed (each waited out the older instance's silence, 100 ms) and no round sent.
    @Test func besideAnOlderInstanceWritersAlsoSendRounds() async throws {
        let (database, store, heads) = try await Self.oneInstance()
        let bundles = try (0..<8).map { try database.login("user\($0)") }
        let older = try await OlderInstance(uri: database.location)
        defer { older.stop() }
        try await Self.awaitCondition("the older instance is heard") { heads.hearsOlderInstance }
        let before = heads.waitCounts
        for bundle in bundles { _ = try store.exchange(bundle.token, context: RequestContext()) }
        let after = heads.waitCounts
        #expect(after.confirmed + after.peerSilent + after.waitedOut == before.confirmed + before.peerSilent + before.waitedOut + 8)
        #expect(after.confirmed - before.confirmed >= 6, "confirmed by the older instance: \(after.confirmed - before.confirmed) of 8")
        #expect(older.roundsConfirmed > 0)
    }

    /// The same older instance, muted (its heartbeats confirm nothing): it is waited for, so
    /// the writes end `peerSilent`, 100 ms after it was last heard, not confirmed.
    @Test func anOlderInstanceThatConfirmsNothingIsWaitedFor() async throws {
        let (database, store, heads) = try await Self.oneInstance()
        let bundles = try (0..<4).map { try database.login("user\($0)") }
        let older = try await OlderInstance(uri: database.location, confirms: false)
        defer { older.stop() }
        try await Self.awaitCondition("the older instance is heard") { heads.hearsOlderInstance }
        let before = heads.waitCounts
        for bundle in bundles { _ = try store.exchange(bundle.token, context: RequestContext()) }
        let after = heads.waitCounts
        #expect(after.confirmed == before.confirmed, "confirmed by an instance that confirms nothing")
        #expect(after.peerSilent + after.waitedOut == before.peerSilent + before.waitedOut + 4)
    }

    /// A's listening connection is killed: announcements may have been missed, so once it
    /// listens again it has forgotten every row it remembered, and a change made meanwhile
    /// is refused by its next verify.
    @Test func anInstanceThatLostItsListenerForgetsEverything() async throws {
        let (database, first, second) = try await Self.twoInstances()
        defer { second.close() }
        let bundle = try database.login("alice")
        let spare = try database.login("bob")
        #expect(try Self.verifyUntilRemembered(first, bundle))
        #expect(try Self.verifyUntilRemembered(first, spare))
        let listens = first.heads?.listens ?? 0

        let killed = try database.rows("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = '\(HeadWatch.applicationName)' AND datname = current_database()
            """)
        #expect(killed.count == 2, "both instances' listeners: \(killed)")
        _ = try second.revokeChains(ofUser: "alice", note: nil, context: .admin)
        #expect(throws: BatonError.chainRevoked(.admin)) { try first.verify(bundle.token) }
        try await Self.awaitCondition("A listens again") { (first.heads?.listens ?? 0) > listens }
        #expect(first.recalledChain(spare.chainID) == nil, "a row remembered before the connection was lost is forgotten")
        try await Self.awaitFresh(first)
        #expect(try Self.verifyUntilRemembered(first, spare))
        #expect(throws: BatonError.chainRevoked(.admin)) { try first.verify(bundle.token) }
    }

    /// A write no Baton code made (`psql`'s plain UPDATE) is announced by the trigger itself,
    /// and the instance stops recalling the row within the bound (no barrier: nothing waits).
    @Test func aRawUpdateIsAnnouncedByTheTrigger() async throws {
        let database = try await BackendDatabase(.postgresql)
        let store = try #require(database.store.base as? PostgresStore)
        try await Self.awaitFresh(store)
        let bundle = try database.login()
        #expect(try Self.verifyUntilRemembered(store, bundle))
        _ = try database.rows("UPDATE chains SET revoked_at = 1, revoked_reason = 'admin' WHERE id = \(bundle.chainID.rawValue)")
        let deadline = ContinuousClock.now + HeadWatch.bound
        while store.recalledChain(bundle.chainID) != nil, ContinuousClock.now < deadline {}
        #expect(store.recalledChain(bundle.chainID) == nil, "still recalled \(HeadWatch.bound) after the UPDATE")
        #expect(throws: BatonError.chainRevoked(.admin)) { try store.verify(bundle.token) }
    }

    /// Only the synchronous standby's warning marks a commit unconfirmed (a 503): another,
    /// such as PostgreSQL's "the NOTIFY queue is half full", must not turn a committed and
    /// announced change into an error.
    @Test func aWarningThatIsNotTheStandbysLeavesTheCommitConfirmed() async throws {
        let connection = try PostgresConnection(uri: try await SharedPostgres.shared.newDatabaseURI(), statementTimeout: .seconds(5))
        defer { connection.close() }
        try connection.execute("DO $$ BEGIN RAISE WARNING 'NOTIFY queue is 50%% full'; END $$")
        #expect(connection.takeWarnings() == 0)
    }

    /// The admin command line does not listen: its change waits out the bound, after which
    /// no instance trusts memory from before it. (The stale build above returned in 6 ms.)
    @Test func aChangeFromAProcessThatDoesNotListenWaitsOutTheBound() async throws {
        let database = try await BackendDatabase(.postgresql)
        var options = PostgresStore.Options()
        options.watchesHeads = false
        let command = try PostgresStore(uri: database.location, key: nil, options: options)
        defer { command.close() }
        _ = try database.login("alice")
        let start = ContinuousClock.now
        _ = try command.revokeChains(ofUser: "alice", note: nil, context: .admin)
        #expect(ContinuousClock.now - start >= HeadWatch.bound)
    }

    /// Verifies `bundle`'s token on this thread until the thread remembers its chain marked
    /// presented (at most 5 s): the first verify marks the head, a later one reads the
    /// marked row and remembers it (while the instance trusts its memory).
    static func verifyUntilRemembered(_ store: PostgresStore, _ bundle: TokenBundle) throws -> Bool {
        try rememberedByVerifying(store, bundle) != nil
    }

    static func rememberedByVerifying(_ store: PostgresStore, _ bundle: TokenBundle) throws -> ChainRecord? {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            _ = try store.verify(bundle.token)
            if let record = store.recalledChain(bundle.chainID), record.head.presented { return record }
        }
        return nil
    }

    /// A fresh database with one instance on it, listening and trusted, and its watch.
    static func oneInstance() async throws -> (BackendDatabase, PostgresStore, HeadWatch) {
        let database = try await BackendDatabase(.postgresql)
        let store = try #require(database.store.base as? PostgresStore)
        let heads = try #require(store.heads)
        try await awaitFresh(store)
        return (database, store, heads)
    }

    /// A fresh database with two instances on it, both listening and trusted; the caller
    /// closes the second.
    static func twoInstances() async throws -> (BackendDatabase, first: PostgresStore, second: PostgresStore) {
        let database = try await BackendDatabase(.postgresql)
        let first = try #require(database.store.base as? PostgresStore)
        let second = try #require(try database.anotherStore() as? PostgresStore)
        try await awaitFresh(first)
        try await awaitFresh(second)
        return (database, first, second)
    }

    static func awaitFresh(_ store: PostgresStore) async throws {
        try await awaitCondition("the instance's heartbeat comes back") { store.heads?.isFresh ?? false }
    }

    static func awaitCondition(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("not within 10 s: \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// What the previous release's listener does on `baton_heads`, for the rolling-upgrade test:
/// a heartbeat every 20 ms and at once when it owes a confirmation, confirming for each other
/// instance the highest round number it heard in that instance's heartbeats; it knows no
/// writers' announcements (it reads them as `*`, which changes nothing it confirms).
final class OlderInstance: @unchecked Sendable {
    private let connection: PostgresConnection
    private let lock = NSLock()
    private var stopped = false
    private var confirmedRounds = 0
    private let done = DispatchSemaphore(value: 0)
    let name = "older" + String(UInt32.random(in: 1...UInt32.max), radix: 36)

    private let confirms: Bool

    /// `confirms` false: its heartbeats confirm nothing (a hung or broken older instance).
    init(uri: String, confirms: Bool = true) async throws {
        self.confirms = confirms
        // As the real listener: its notifying commits are not flushed.
        connection = try PostgresConnection(uri: uri, statementTimeout: .seconds(5), settings: ["SET synchronous_commit = off"])
        try connection.execute("LISTEN \(HeadWatch.channel)")
        Thread.detachNewThread { [self] in run() }
    }

    /// Heartbeats sent that confirmed a round.
    var roundsConfirmed: Int { lock.withLock { confirmedRounds } }

    func stop() {
        lock.withLock { stopped = true }
        done.wait()
        connection.close()
    }

    private func run() {
        defer { done.signal() }
        var sequence: UInt64 = 0, highest: [String: UInt64] = [:], owed: [String: UInt64] = [:]
        var lastSent = ContinuousClock.now - .seconds(1)
        while !lock.withLock({ stopped }) {
            if !owed.isEmpty || ContinuousClock.now - lastSent >= HeadWatch.beatInterval {
                sequence += 1
                let beat = HeadAnnouncement.beat(.init(instance: name, sequence: sequence, round: 0, confirms: owed, knowsWrites: false))
                if !owed.isEmpty { lock.withLock { confirmedRounds += 1 } }
                owed = [:]
                lastSent = ContinuousClock.now
                guard (try? connection.query("SELECT pg_notify($1, $2)", [HeadWatch.channel, beat.payload])) != nil else { return }
            }
            guard let payloads = try? connection.notifications(on: HeadWatch.channel, waitingUpTo: 20, orUntilReadable: -1) else { return }
            for case .beat(let heard) in payloads.map(HeadAnnouncement.init(payload:)) where confirms && heard.instance != name && heard.round > 0 {
                highest[heard.instance] = max(highest[heard.instance] ?? 0, heard.round)
                owed[heard.instance] = highest[heard.instance]
            }
        }
    }
}

/// The announcements' text (pure).
struct HeadAnnouncementTests {
    @Test func aHeartbeatReadsBackAsWritten() {
        let beat = HeadAnnouncement.beat(.init(instance: "k3x9", sequence: 42, round: 7, confirms: ["a1": 3, "zz": 9]))
        #expect(beat.payload == "h k3x9 42 7 a1.3 zz.9 knowswritetags.1")
        #expect(HeadAnnouncement(payload: beat.payload) == beat)
        // An older Baton's heartbeat: no mark, so it confirms rounds only.
        let older = HeadAnnouncement.beat(.init(instance: "k3x9", sequence: 42, round: 7, confirms: ["a1": 3], knowsWrites: false))
        #expect(older.payload == "h k3x9 42 7 a1.3")
        #expect(HeadAnnouncement(payload: "h k3x9 42 7 a1.3") == older)
        #expect(HeadAnnouncement(payload: "c12") == .chains([12]))
        #expect(HeadAnnouncement(payload: "c12 7 9") == .chains([12, 7, 9]))
        #expect(HeadAnnouncement.chains([12, 7]).payload == "c12 7")
        #expect(HeadAnnouncement(payload: "*") == .everything)
    }

    /// A writer's announcement: its instance, its tag, and what changed (nothing, chains, or
    /// everything), read back as written.
    @Test(arguments: [
        ("w k3x9 7", HeadAnnouncement.Write(instance: "k3x9", tag: 7, change: nil)),
        ("w k3x9 7 c12 13", HeadAnnouncement.Write(instance: "k3x9", tag: 7, change: .chains([12, 13]))),
        ("w a1 18446744073709551615 *", HeadAnnouncement.Write(instance: "a1", tag: .max, change: .everything)),
    ])
    func aWritersAnnouncementReadsBackAsWritten(_ payload: String, _ write: HeadAnnouncement.Write) {
        #expect(HeadAnnouncement(payload: payload) == .write(write))
        #expect(HeadAnnouncement.write(write).payload == payload)
    }

    /// What cannot be understood forgets everything rather than being ignored.
    @Test(arguments: ["", "c", "c-4", "c0", "cx", "c1  2", "c1 x", "h", "h A 1 0", "h a 1", "h a x 0", "h a 1 0 b", "h a 1 0 b.x", "x12", "h a 1 0  ",
                     "w", "w a", "w a 0", "w A 1", "w a x", "w a 1 ", "w a 1 c", "w a 1 cx", "w a 1 **", "w a 1 h a 1 0", "w a 1 w a 2", "w a 1 c1  2"])
    func anythingElseMeansEverything(_ payload: String) {
        #expect(HeadAnnouncement(payload: payload) == .everything)
    }

    @Test func onlyStatementsThatMayWriteChainsOrUsersWait() {
        #expect(Transaction.mayChangeHeads("UPDATE chains SET revoked_at = $1"))
        #expect(Transaction.mayChangeHeads("INSERT INTO users (username) VALUES ($1)"))
        #expect(Transaction.mayChangeHeads("DELETE FROM tokens WHERE chain_id IN (SELECT id FROM chains)"))
        #expect(!Transaction.mayChangeHeads("SELECT id FROM chains WHERE user_id = $1 FOR UPDATE"))
        #expect(!Transaction.mayChangeHeads("INSERT INTO audit (at, kind, chain_id) VALUES ($1, $2, $3)"))
    }
}

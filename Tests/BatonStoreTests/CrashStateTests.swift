import BatonCrash
import Testing

/// The power-cut model of baton-crash (`CrashState.build`), on hand-made logs: what a sync
/// made durable survives every crash; what came after it survives in some crashes and not in
/// others, torn at sector boundaries; an unsynced new file may vanish; the -shm never survives.
struct CrashStateTests {
    static let a = [UInt8](repeating: 0xAA, count: 1024)
    static let b = [UInt8](repeating: 0xBB, count: 2048)

    /// db: write A at 0, sync, write B at 1024 (unsynced); wal created, written, never synced; shm written.
    static let log = CrashLog(
        operations: [
            .write(file: 0, offset: 0, bytes: 0..<1024), .sync(file: 0), .mark(0),
            .write(file: 0, offset: 1024, bytes: 1024..<3072),
            .create(file: 1), .write(file: 1, offset: 0, bytes: 0..<1024),
            .create(file: 2), .write(file: 2, offset: 0, bytes: 0..<1024),
        ],
        data: a + b, files: ["baton.db", "baton.db-wal", "baton.db-shm"])

    static func states(count: Int = 200) -> [[String: [UInt8]]] {
        (0..<count).map { seed in
            var random = CrashRandom(seed: UInt64(seed))
            return CrashState.build(log: log, durableBefore: [:], crashPoint: log.operations.count, random: &random)
        }
    }

    @Test func whatASyncMadeDurableSurvivesEveryCrash() {
        for state in Self.states() { #expect(state["baton.db"].map { Array($0.prefix(1024)) } == Self.a) }
    }

    @Test func anUnsyncedWriteSurvivesSomeCrashesNotOthersAndMayBeTorn() {
        let tails = Self.states().map { Array(($0["baton.db"] ?? []).dropFirst(1024)) }
        #expect(tails.contains([]))  // dropped
        #expect(tails.contains(Self.b))  // whole
        // Torn: only whole sectors of it, never a partial one.
        #expect(tails.contains { !$0.isEmpty && $0.count < Self.b.count })
        #expect(tails.allSatisfy { $0.count % CrashState.sector == 0 })
    }

    @Test func anUnsyncedNewFileMayHaveNoDirectoryEntryAndTheShmNeverSurvives() {
        let states = Self.states()
        #expect(states.contains { $0["baton.db-wal"] == nil } && states.contains { $0["baton.db-wal"] != nil })
        #expect(states.allSatisfy { $0["baton.db-shm"] == nil })
    }

    @Test func aCrashBeforeTheSyncMayLoseEvenTheFirstWrite() {
        var seen: Set<Int> = []
        for seed in 0..<100 {
            var random = CrashRandom(seed: UInt64(seed))
            let state = CrashState.build(log: Self.log, durableBefore: ["baton.db": []], crashPoint: 1, random: &random)
            seen.insert(state["baton.db"]?.count ?? -1)
        }
        #expect(seen.contains(0) && seen.contains(1024))
    }
}

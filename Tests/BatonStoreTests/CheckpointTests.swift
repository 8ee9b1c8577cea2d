@testable import BatonCore
@testable import BatonStore
import Foundation
import Synchronization
import Testing

/// Checkpoints run beside the writer, never inside its COMMIT, and the WAL stays bounded.
/// SQLite only: WAL checkpoints are SQLite's mechanics (PostgreSQL runs its own).
struct CheckpointTests {
    /// Small limits so that a few thousand exchanges cross them many times.
    static var smallLimits: TokenStore.Options {
        var options = TokenStore.Options()
        options.checkpoints.passiveEvery = 64
        options.checkpoints.restartAt = 256
        options.checkpoints.catchUpAt = 64
        return options
    }

    static func walBytes(_ databasePath: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: databasePath + "-wal"))?[.size] as? Int) ?? 0
    }

    @Test func writerConnectionRunsNoAutomaticCheckpoint() throws {
        let db = try TemporaryDatabase()
        let setting = try db.store.writer.write { connection throws(SQLiteError) in
            try connection.statement("PRAGMA wal_autocheckpoint").first { $0.int(0) }
        }
        #expect(setting == 0)
    }

    @Test func walStaysBoundedThroughThousandsOfExchanges() throws {
        let db = try TemporaryDatabase(options: Self.smallLimits)
        let threads = 8, perThread = 500
        let heads = Mutex(try (0..<threads).map { try db.login(device: "device-\($0)").token })
        let largestWAL = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let store = db.store, path = db.path
        race(threads: threads) { index in
            var token = heads.withLock { $0[index] }
            for _ in 0..<perThread {
                guard let next = try? store.exchange(token).token else {
                    failures.add(1, ordering: .relaxed)
                    return
                }
                token = next
                largestWAL.max(Self.walBytes(path), ordering: .relaxed)
            }
            heads.withLock { $0[index] = token }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        let limits = Self.smallLimits.checkpoints
        // The hard limit, plus a batch's worth of frames committed before the writer acts on it.
        let bound = (limits.hardLimit + 256) * (Connection.newDatabasePageSize + 24)
        #expect(largestWAL.load(ordering: .relaxed) <= bound)
        #expect(db.store.checkpointStatistics.longestWAL <= limits.hardLimit + 256)
        #expect(db.store.checkpointStatistics.passive > 0)
        // Without checkpoints these exchanges write tens of thousands of frames.
        #expect(db.store.commitStatistics.writes >= threads * perThread)
        for token in heads.withLock({ $0 }) { #expect(throws: Never.self) { try db.store.verify(token) } }
    }

    @Test func closingCheckpointsEverythingAndRemovesTheWAL() throws {
        let db = try TemporaryDatabase(options: Self.smallLimits)
        var token = try db.login().token
        for _ in 0..<300 { token = try db.store.exchange(token).token }
        db.store.close()
        #expect(!FileManager.default.fileExists(atPath: db.path + "-wal"))
        try db.reopen()
        #expect(throws: Never.self) { try db.store.verify(token) }
    }

    @Test func idleStoreTruncatesTheWAL() throws {
        var options = Self.smallLimits
        options.checkpoints.idleAfter = .milliseconds(50)
        let db = try TemporaryDatabase(options: options)
        var token = try db.login().token
        for _ in 0..<100 { token = try db.store.exchange(token).token }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !(db.store.checkpointStatistics.truncated > 0 && Self.walBytes(db.path) == 0) {
            usleep(20_000)  // polling a condition with a deadline
        }
        #expect(db.store.checkpointStatistics.truncated > 0)
        #expect(Self.walBytes(db.path) == 0)
        #expect(throws: Never.self) { try db.store.verify(token) }
    }

    @Test(arguments: [
        // frames in the WAL, frames copied, whether the writer finishes (limits: 256 / 64 / hard 512)
        (100, 0, false),  // a short WAL
        (256, 200, true),  // long, 56 left to copy
        (256, 100, false),  // long, 156 left: the checkpointer goes on
        (512, 0, true),  // the hard limit: finish whatever is left
        (300, 5000, false),  // restarted since the last checkpoint: all 300 are left
    ])
    func writerFinishesOnlyWhenTheWALIsLongAndAlmostCopied(frames: Int, backfilled: Int, expected: Bool) {
        #expect(Checkpointer.shouldWriterFinish(frames: frames, backfilled: backfilled, Self.smallLimits.checkpoints) == expected)
    }
}

import Foundation
import Glibc
import Synchronization
import Testing

/// Verify answers from memory (docs/design.md, "Verify from memory"), and no acknowledged
/// change is missed: threads hammer `/v1/verify` on a real server while the token is
/// exchanged, revoked by `baton admin` in another process, or revoked by a raw write in the
/// sqlite3 shell. A verify that started after the change was acknowledged (the exchange's
/// response read, the command exited, the shell's statement done) must not answer 200.
///
/// Each test was run once against a deliberately stale build and failed then (see each
/// test's comment): the race is real, the window is hit, and the assertion catches it.
@Suite(.serialized)
struct VerifyFromMemoryTests {
    /// Verifies per thread that must start after the change (the test's reach past it).
    static let verifiesAfterChange = 200
    static let hammers = 3

    /// Exchanges the token 8 times while verify runs hot on it: after each exchange's answer,
    /// no verify of the old token succeeds, and the new token verifies.
    ///
    /// Run once (2026-11-26) against a deliberately stale build, whose writer did not stamp
    /// the chains it wrote (`HeadMemory.committed` skipping `chains`), this failed in all 8
    /// rounds: 600 of 600 verifies after the exchange's answer accepted the old token (400 of
    /// 600 in one round), from memory.
    @Test func verifyRacingExchangeNeverAcceptsTheOldTokenAfterTheAnswer() async throws {
        let server = try await ServerProcess.start(on: .sqlite)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            var token = try server.login()["token"] as! String
            for round in 0..<8 {
                let old = token
                let (outcome, next) = try Self.hammer(server, token: old) { () throws -> String? in
                    let answer = try server.request("POST", "/v1/exchange", token: old)
                    guard answer.status == 200, let next = answer.json["token"] as? String else {
                        throw ServerProcess.ServerError.didNotStart("exchange: \(answer.status) \(answer.text)")
                    }
                    return next
                }
                token = try #require(next)
                #expect(outcome.acceptedBefore > 0, "round \(round): the old token never verified before its exchange")
                #expect(outcome.startedAfter >= Self.hammers * Self.verifiesAfterChange)
                #expect(outcome.acceptedAfter == 0, "round \(round): \(outcome.acceptedAfter) verifies after the exchange accepted the old token")
                #expect(try server.request("GET", "/v1/verify", token: token).status == 200)
            }
        }
    }

    /// `baton admin revoke` (one user's chains, or every chain) runs as a separate process
    /// while verify runs hot, on either store: once it exited, no verify succeeds.
    ///
    /// Run once (2026-11-26) against deliberately stale builds, this failed for both arguments:
    /// - SQLite, `HeadMemory.recall` trusting its rows without comparing the WAL index's
    ///   change key: 600 of 600 verifies after the command exited answered 200, and so did a
    ///   verify after the race.
    /// - PostgreSQL, `PostgresStore` keeping every chain row verify read for 1.5 s: 600 of
    ///   600 likewise; with rows kept 20 ms, 9 (`--user`) and 1 (`--all`) of 600.
    /// - PostgreSQL with verify from memory (`HeadWatch`), the command not waiting out the
    ///   bound and the listener applying announcements 5 ms late: 2 of 600 (`--user`). The
    ///   real build with the same slow listener passed.
    ///
    /// The expectations are checked here, not on the racing threads: an issue recorded off
    /// the test's task is reported against no test.
    @Test(arguments: StoreBackend.allCases, [["--user", "alice", "--reason", "phone stolen"], ["--all", "--reason", "restore", "--yes"]])
    func verifyRacingRevocationByAnotherProcessRefusesOnceItExited(_ backend: StoreBackend, _ arguments: [String]) async throws {
        let server = try await ServerProcess.start(on: backend)
        let (outcome, after) = try await offPool { () throws -> (Outcome, String?) in
            defer { server.stop() }
            try server.addUser("alice")
            let token = try server.login()["token"] as! String
            let (outcome, _) = try Self.hammer(server, token: token) { () throws -> String? in
                let (status, _, err) = try runBaton(["admin", "revoke"] + arguments + ["--db", server.databasePath])
                guard status == 0 else { throw ServerProcess.ServerError.didNotStart("revoke: \(err)") }
                return nil
            }
            return (outcome, try server.request("GET", "/v1/verify", token: token).error)
        }
        #expect(outcome.acceptedBefore > 0)
        #expect(outcome.startedAfter >= Self.hammers * Self.verifiesAfterChange)
        #expect(outcome.acceptedAfter == 0, "\(outcome.acceptedAfter) verifies after the revocation exited answered 200")
        #expect(after == "chain_revoked")
    }

    /// A write no Baton code made: the sqlite3 shell revokes the chain with a plain UPDATE
    /// (the fail-closed path: memory cannot know which row changed, so it forgets them all).
    ///
    /// Run once against the stale build of the test above, this failed the same way: 600 of
    /// 600 verifies after the UPDATE answered 200.
    @Test func verifyRacingARawWriteFromTheSQLiteShellRefusesOnceItCommitted() async throws {
        guard SQLiteShell.binary != nil else { Issue.record("sqlite3 is not installed (./scripts/test installs it)"); return }
        let server = try await ServerProcess.start(on: .sqlite)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            let token = try server.login()["token"] as! String
            nonisolated(unsafe) let shell = try SQLiteShell(server.databasePath)  // used by one thread at a time
            try shell.run(".timeout 10000")
            let (outcome, _) = try Self.hammer(server, token: token) { () throws -> String? in
                try shell.run("UPDATE chains SET revoked_at = 1, revoked_reason = 'admin';")
                return nil
            }
            #expect(outcome.acceptedBefore > 0)
            #expect(outcome.startedAfter >= Self.hammers * Self.verifiesAfterChange)
            #expect(outcome.acceptedAfter == 0, "\(outcome.acceptedAfter) verifies after the shell's UPDATE answered 200")
        }
    }

    /// What the hammering threads saw around `change`.
    struct Outcome {
        var acceptedBefore = 0
        var startedAfter = 0
        var acceptedAfter = 0
    }

    /// The hammering threads' shared state.
    final class Race: Sendable {
        let changedAt = Atomic<UInt64>(.max)
        let warmedUp = DispatchSemaphore(value: 0)
        let results = Mutex<[(start: UInt64, status: Int)]>([])
        let failure = Mutex<(any Error)?>(nil)
        let changed = Mutex<String?>(nil)
    }

    /// Verifies `token` on `hammers` threads (one kept-alive connection each) while one more
    /// thread waits until every hammer has had an answer, then runs `change` (which may
    /// return a new token); each hammer stops after `verifiesAfterChange` verifies that
    /// started once `change` had returned.
    static func hammer(_ server: ServerProcess, token: String, change: @escaping @Sendable () throws -> String?) throws -> (Outcome, String?) {
        let state = Race()
        race(threads: hammers + 1) { index in
            do {
                if index == hammers {
                    for _ in 0..<hammers { state.warmedUp.wait() }
                    let result = try change()
                    state.changed.withLock { $0 = result }
                    state.changedAt.store(monotonicNanoseconds(), ordering: .sequentiallyConsistent)
                    return
                }
                let connection = try server.connect()
                defer { connection.close() }
                var seen: [(start: UInt64, status: Int)] = []
                var after = 0
                while after < verifiesAfterChange {
                    let start = monotonicNanoseconds()
                    let answer = try connection.request("GET", "/v1/verify", token: token)
                    seen.append((start, answer.status))
                    if seen.count == 1 { state.warmedUp.signal() }
                    if start > state.changedAt.load(ordering: .sequentiallyConsistent) { after += 1 }
                }
                state.results.withLock { $0 += seen }
            } catch {
                state.failure.withLock { $0 = error }
                if index != hammers { state.warmedUp.signal() }
                state.changedAt.store(0, ordering: .sequentiallyConsistent)  // let the others finish
            }
        }
        if let error = state.failure.withLock({ $0 }) {
            Issue.record("the race failed (\(error)); the server's stderr: \(server.stderr)")
            throw error
        }
        let cut = state.changedAt.load(ordering: .sequentiallyConsistent)
        var outcome = Outcome()
        for (start, status) in state.results.withLock({ $0 }) {
            if start > cut {
                outcome.startedAfter += 1
                if status == 200 { outcome.acceptedAfter += 1 }
            } else if status == 200 {
                outcome.acceptedBefore += 1
            }
        }
        return (outcome, state.changed.withLock { $0 })
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

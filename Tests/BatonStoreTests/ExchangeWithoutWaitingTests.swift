@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Dispatch
import Synchronization
import Testing

/// SQLite's exchange without waiting (`LineageStore.exchange(_:context:then:)`, what an event
/// loop starts): it returns before the commit, and each caller is answered exactly once, after
/// the batch is durable, also when a batch fails and its writes are re-run one by one.
struct ExchangeWithoutWaitingTests {
    @Test func returnsBeforeTheCommitAndAnswersOnceAfterIt() throws {
        let database = try TemporaryDatabase()
        let bundle = try database.login()
        #expect(database.store.writesWithoutWaiting)
        // Another connection holds SQLite's write lock: the writer cannot commit until it lets go.
        let other = try Connection(path: database.path)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE")
        let answers = Mutex<[Result<TokenBundle, BatonError>]>([])
        let answered = DispatchSemaphore(value: 0)
        // Called on a thread of its own, so that a call that waited for the commit (which
        // cannot come while the lock is held) fails the test instead of hanging it.
        let returned = DispatchSemaphore(value: 0)
        let store = database.store
        DispatchQueue.global().async {
            store.exchange(bundle.token, context: RequestContext()) { result in
                answers.withLock { $0.append(result) }
                answered.signal()
            }
            returned.signal()
        }
        #expect(returned.wait(timeout: .now() + 30) == .success, "exchange(_:context:then:) waited for the commit")
        // Returned while the lock is held: so no answer can exist yet.
        #expect(answers.withLock { $0.isEmpty })
        try other.execute("COMMIT")
        answered.wait()
        let successor = try #require(try answers.withLock { $0 }.first?.get())
        #expect(successor.generation == 1)
        #expect(try database.store.verify(successor.token).chainID == bundle.chainID)
        #expect(batonError { _ = try database.store.verify(bundle.token) } == .tokenSuperseded)
        // A later batch answers its own callers only.
        try database.store.write { _ throws(SQLiteError) in }
        #expect(answers.withLock { $0.count } == 1)
    }

    /// Three writes in one batch, the middle one failing: the batch is rolled back and each
    /// write re-run in a transaction of its own, and each caller hears exactly once.
    @Test func aFailedBatchAnswersEachCallerOnce() throws {
        let database = try TemporaryDatabase()
        let other = try Connection(path: database.path)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE")  // holds the writer until all three are queued
        let answers = Mutex<[Int: [Result<Int, BatonError>]]>([:])
        let allAnswered = DispatchSemaphore(value: 0)
        for index in 0..<3 {
            database.store.writeConnection({ _ throws(SQLiteError) -> Int in
                if index == 1 { throw SQLiteError(code: 19, message: "constraint failed (test)") }
                return index
            }, then: { result in
                answers.withLock { $0[index, default: []].append(result) }
                allAnswered.signal()
            })
        }
        try other.execute("COMMIT")
        for _ in 0..<3 { allAnswered.wait() }
        let heard = answers.withLock { $0 }
        #expect(heard.values.map(\.count) == [1, 1, 1])
        #expect((try? heard[0]?.first?.get()) == 0)
        #expect((try? heard[2]?.first?.get()) == 2)
        guard case .failure(.unavailable)? = heard[1]?.first else {
            Issue.record("the failing write was answered \(String(describing: heard[1]))")
            return
        }
    }
}

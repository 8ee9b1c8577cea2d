@testable import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// The pool against a real PostgreSQL behind a relay that holds new connections (a server slow
/// to accept them: a fork storm, a starved machine), or that is gone.
@Suite struct ConnectionPoolTests {
    /// The second borrower finds no idle connection; the connect it asks for is held. The
    /// first borrower gives its connection back: the second takes it and succeeds at once.
    /// (Before: the second borrower made its connection itself and waited for it alone; after
    /// libpq's 3 s connect timeout it failed, and its request was answered 503, while a
    /// healthy connection had been idle for seconds. Seen in KeyRotationTests on PostgreSQL,
    /// 4 of 12 runs, with the test machine starved by its client processes.)
    @Test func aConnectSlowToBeAcceptedDoesNotFailABorrowerWhileALentConnectionComesBack() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let relay = try HeldConnectRelay(to: try Self.port(of: uri), passing: 1)
        defer { relay.close() }
        let pool = ConnectionPool(uri: Self.uri(uri, through: relay), size: 4, statementTimeout: .seconds(5), waitTimeout: .seconds(5))
        defer { pool.close() }

        let firstHasItsConnection = DispatchSemaphore(value: 0)
        let firstDone = DispatchSemaphore(value: 0)
        Thread {
            do {
                try pool.withConnection { connection throws(PostgresError) in
                    firstHasItsConnection.signal()
                    // Given back only once the second borrower's connect is held.
                    _ = eventually(within: 10) { relay.heldConnections == 1 }
                    try connection.execute("SELECT 1")
                }
            } catch {
                Issue.record("the first borrower: \(error)")
            }
            firstDone.signal()
        }.start()
        firstHasItsConnection.wait()

        let started = ContinuousClock.now
        var answer: [[String?]] = []
        do {
            answer = try pool.withConnection { connection throws(PostgresError) in try connection.query("SELECT 41 + 1") }
        } catch {
            Issue.record("the second borrower failed after \(ContinuousClock.now - started): \(error)")
        }
        let waited = ContinuousClock.now - started
        firstDone.wait()
        #expect(answer == [["42"]])
        #expect(relay.heldConnections == 1, "the second borrower asked for a connection of its own")
        #expect(waited < .seconds(2), "waited \(waited): for its own connect, not for the one given back")
        // The held connect fails in the background (libpq's connect timeout) and is counted.
        #expect(eventually(within: 10) { pool.statistics.connectFailures == 1 })
        #expect(pool.statistics.connects == 1)
    }

    /// Nothing lent out, nothing else being made, and the connect fails: the borrower fails with
    /// libpq's message within the connect timeout, not after the pool's wait.
    @Test func aBorrowerFailsWithLibpqsMessageWhenItsConnectFailsAndNothingElseCanCome() async throws {
        let uri = try await SharedPostgres.shared.newDatabaseURI()
        let relay = try HeldConnectRelay(to: try Self.port(of: uri), passing: 0)
        defer { relay.close() }
        let pool = ConnectionPool(uri: Self.uri(uri, through: relay) + "?connect_timeout=2", size: 4,
                                  statementTimeout: .seconds(30), waitTimeout: .seconds(30))
        defer { pool.close() }
        let started = ContinuousClock.now
        do {
            try pool.withConnection { connection throws(PostgresError) in try connection.execute("SELECT 1") }
            Issue.record("a held connect succeeded")
        } catch {
            #expect(error.message.hasSuffix("failed: timeout expired"), "\(error.message)")
            #expect(error.isConnectionLost)
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(2) && waited < .seconds(10), "waited \(waited)")
    }

    /// A database that refuses connections is reported at once.
    @Test func aRefusedConnectFailsAtOnce() throws {
        // Bound, not listening: a connect is refused (kept bound so that nothing else takes the port).
        let (fd, port) = try HeldConnectRelay.bindLoopback()
        defer { close(fd) }
        let pool = ConnectionPool(uri: "postgresql://baton@127.0.0.1:\(port)/baton", size: 4, statementTimeout: .seconds(30), waitTimeout: .seconds(30))
        defer { pool.close() }
        let started = ContinuousClock.now
        #expect(throws: PostgresError.self) {
            try pool.withConnection { connection throws(PostgresError) in try connection.execute("SELECT 1") }
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(pool.statistics.connectFailures == 1 && pool.statistics.open == 0)
    }

    static func port(of uri: String) throws -> UInt16 {
        guard let authority = uri.split(separator: "@").last?.split(separator: "/").first,
              let port = authority.split(separator: ":").last.flatMap({ UInt16($0) }) else {
            throw HeldConnectRelay.RelayError.setup("no port in \(uri)")
        }
        return port
    }

    static func uri(_ uri: String, through relay: HeldConnectRelay) -> String {
        uri.replacingOccurrences(of: ":\((try? port(of: uri)) ?? 0)/", with: ":\(relay.port)/")
    }
}

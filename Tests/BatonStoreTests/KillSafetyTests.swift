@testable import BatonCore
@testable import BatonStore
import BatonTestSupport
import Foundation
import Testing

/// A process exchanging in a loop is killed with SIGKILL; every acknowledged exchange survives.
/// SQLite only: the helper (baton-exchange-loop) opens a SQLite file in its own process, which
/// is what a kill can leave half-written (a WAL to recover). PostgreSQL's side of the same
/// question is BatonServerTests' CrashLoopTests, which kills a real server on both stores.
struct KillSafetyTests {
    @Test func acknowledgedExchangesSurviveSIGKILL() throws {
        let helper = productsDirectory.appendingPathComponent("baton-exchange-loop")
        try #require(FileManager.default.isExecutableFile(atPath: helper.path), "build it first: swift build --build-tests")
        let db = try TemporaryDatabase()
        db.store.close()
        let process = ChildProcess()
        process.executableURL = helper
        process.arguments = [db.path, "8"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        try output.fileHandleForWriting.close()  // only the child writes: EOF when it dies

        // Read acknowledgements until enough have arrived, then kill mid-flight.
        var acknowledged: [ChainID: (generation: Int, token: String)] = [:]
        var count = 0
        var pending = Data()
        func take(_ chunk: Data) {
            pending.append(chunk)
            while let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                let fields = line.split(separator: " ")
                guard fields.count == 4, fields[0] == "ACK", let chain = ChainID(hex: String(fields[1])), let generation = Int(fields[2]) else { continue }
                if generation >= (acknowledged[chain]?.generation ?? -1) { acknowledged[chain] = (generation, String(fields[3])) }
                count += 1
            }
        }
        let reader = output.fileHandleForReading
        while count < 400 {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            take(chunk)
        }
        process.send(SIGKILL)
        process.waitUntilExit()
        // Acknowledgements the helper wrote before it died but the loop above had not read yet
        // (on a loaded machine, many): they count too.
        take(reader.readDataToEndOfFile())
        #expect(process.terminationReason == .uncaughtSignal)
        try #require(count >= 400, "the helper stopped early")
        #expect(acknowledged.count == 8)

        // Reopen the same file: nothing acknowledged is lost, and the lineage is consistent.
        try db.reopen(clock: SystemClock())  // the helper issued on the real clock
        let connection = try Connection(path: db.path)
        defer { connection.close() }
        #expect(try connection.statement("PRAGMA integrity_check").first { $0.text(0) } == "ok")
        for (chain, ack) in acknowledged {
            let head = try #require(try connection.statement("SELECT head_generation FROM chains WHERE id = ? AND revoked_at IS NULL")
                .first([.int(chain.rawValue)]) { Int($0.int(0)) })
            #expect(head == ack.generation || head == ack.generation + 1, "at most the one in-flight exchange is unacknowledged")
            switch Result(catching: { try db.store.verify(ack.token) }) {
            case .success: #expect(head == ack.generation)
            case .failure(let error):
                #expect(error as? BatonError == .tokenSuperseded)
                #expect(head == ack.generation + 1)
            }
            // Generations 0..<head each left exactly one 'exchanged' lineage row.
            let lineage = try connection.statement(
                "SELECT generation FROM tokens WHERE chain_id = ? AND ended_by = 'exchanged' ORDER BY generation"
            ).all([.int(chain.rawValue)]) { Int($0.int(0)) }
            #expect(lineage == Array(0..<head))
        }
    }
}

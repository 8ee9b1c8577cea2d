@testable import BatonCore
@testable import BatonStore
import Foundation

/// What a client was told: the newest token acknowledged (200) for a chain, and its generation.
struct Acknowledged {
    var generation: Int
    var token: String
}

/// Checks a database (its server stopped or killed) against what clients were acknowledged:
/// the invariants every fault test ends with.
struct LineageCheck {
    /// Chains whose head is one generation past the acknowledged one: an exchange committed
    /// but its answer was lost (the kill came between commit and send). Allowed, counted.
    var aheadByOne = 0
    /// Acknowledged chains checked.
    var chainsChecked = 0
    /// Acknowledged tokens (one per chain: its newest) found exactly as acknowledged.
    var acknowledgedFound = 0
    /// Every broken invariant, as a sentence. Empty when all hold.
    var problems: [String] = []

    /// Opens `databasePath` (read-write: a WAL left by a kill is recovered) and checks:
    /// `PRAGMA integrity_check`; every acknowledged token is the chain's head or superseded
    /// (lineage row `exchanged`) with the head at most one step ahead; no exchanged token at
    /// or past the head (one live token per chain); generations 0...head contiguous; an
    /// `exchanged` (or R3a `exchange_retried`) audit event for every generation the chain
    /// reached, and its login.
    init(databasePath: String, acknowledged: [Int64: Acknowledged]) throws {
        let connection = try Connection(path: databasePath)
        defer { connection.close() }
        let integrity = try connection.statement("PRAGMA integrity_check").all { $0.text(0) }
        if integrity != ["ok"] { problems.append("integrity_check: \(integrity)") }
        let liveExchanged = try connection.statement("""
            SELECT count(*) FROM tokens t JOIN chains c ON c.id = t.chain_id
            WHERE t.ended_by = 'exchanged' AND t.generation >= c.head_generation
            """).first { $0.int(0) } ?? 0
        if liveExchanged != 0 { problems.append("\(liveExchanged) exchanged tokens at or past their chain's head") }
        let chains = try connection.statement("SELECT id, head_generation, head_hash FROM chains").all { ($0.int(0), Int($0.int(1)), $0.blob(2)) }
        for (chain, head, headHash) in chains {
            let generations = Set(try connection.statement("SELECT generation FROM tokens WHERE chain_id = ?").all([.int(chain)]) { Int($0.int(0)) })
            if generations.union([head]) != Set(0...head) { problems.append("chain \(chain): generations \(generations.sorted()) + head \(head) not contiguous") }
            let exchangeEvents = Set(try connection.statement("SELECT generation FROM audit WHERE kind IN ('exchanged', 'exchange_retried') AND chain_id = ?")
                .all([.int(chain)]) { Int($0.int(0)) })
            if exchangeEvents != Set(head > 0 ? Array(1...head) : []) {
                problems.append("chain \(chain): exchanged events for generations \(exchangeEvents.sorted()), head \(head)")
            }
            let logins = try connection.statement("SELECT count(*) FROM audit WHERE kind = 'login_succeeded' AND chain_id = ?").first([.int(chain)]) { $0.int(0) } ?? 0
            if logins != 1 { problems.append("chain \(chain): \(logins) login events") }
            guard let ack = acknowledged[chain] else { continue }
            chainsChecked += 1
            let hash = TokenHash(of: ack.token).bytes
            if head == ack.generation {
                if headHash == hash { acknowledgedFound += 1 } else { problems.append("chain \(chain): head \(head) is not the acknowledged token") }
            } else if head == ack.generation + 1 {
                let superseded = try connection.statement("SELECT count(*) FROM tokens WHERE chain_id = ? AND generation = ? AND hash = ? AND ended_by = 'exchanged'")
                    .first([.int(chain), .int(Int64(ack.generation)), .blob(hash)]) { $0.int(0) } ?? 0
                if superseded == 1 { acknowledgedFound += 1; aheadByOne += 1 } else { problems.append("chain \(chain): acknowledged generation \(ack.generation) missing from the lineage") }
            } else {
                problems.append("chain \(chain): head \(head), acknowledged \(ack.generation): lost")
            }
        }
        let missing = Set(acknowledged.keys).subtracting(chains.map(\.0))
        if !missing.isEmpty { problems.append("acknowledged chains missing: \(missing.sorted())") }
    }

    /// Acknowledged chains whose token was not found as acknowledged: lost operations.
    var lost: Int { chainsChecked - acknowledgedFound }
}

/// The database id of a chain named by its hex `chain_id` (as the API answers).
func chainDatabaseID(_ hex: String) -> Int64? { ChainID(hex: hex)?.rawValue }

@testable import BatonCore
import Foundation

/// What a client was told: the newest token acknowledged (200) for a chain, and its generation.
struct Acknowledged {
    var generation: Int
    var token: String
}

/// Checks a database (its server stopped or killed) against what clients were acknowledged:
/// the invariants every fault test ends with, on either store.
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

    /// One row of `tokens`: a token that is no longer its chain's head.
    struct EndedToken: Equatable {
        var generation: Int
        var hash: String
        var endedBy: String
    }

    /// Reads `databasePath` (a SQLite file, opened read-write so that a WAL left by a kill is
    /// recovered, or a PostgreSQL URI) and checks: on SQLite `PRAGMA integrity_check`
    /// (PostgreSQL has no equivalent short of the amcheck extension; its own crash recovery is
    /// what the server runs on); every acknowledged token is the chain's head or superseded
    /// (lineage row `exchanged`) with the head at most one step ahead; no exchanged token at
    /// or past the head (one live token per chain); generations 0...head contiguous; an
    /// `exchanged` (or R3a `exchange_retried`) audit event for every generation the chain
    /// reached, and its login.
    init(databasePath: String, acknowledged: [Int64: Acknowledged]) throws {
        let query = { (sql: String) throws -> [[String]] in try queryDatabase(sql, at: databasePath) }
        let hex = { (column: String) in isPostgresURI(databasePath) ? "encode(\(column), 'hex')" : "lower(hex(\(column)))" }
        if !isPostgresURI(databasePath) {
            let integrity = try query("PRAGMA integrity_check").map { $0.first ?? "" }
            if integrity != ["ok"] { problems.append("integrity_check: \(integrity)") }
        } else {
            // PostgreSQL outlives the killed server: its sessions finish what the server had
            // already sent (a transaction's writes and COMMIT leave in two writes, without
            // waiting for answers) before they notice it is gone. Check the database as the
            // kill left it, once no session of the dead server is still at work, not in the
            // middle of a commit (these reads are separate statements, not one snapshot).
            let deadline = ContinuousClock.now + .seconds(10)
            while try query("""
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                """) != [["0"]] {
                guard ContinuousClock.now < deadline else {
                    problems.append("the killed server's PostgreSQL sessions were still open 10 s after the kill")
                    break
                }
                usleep(10_000)
            }
        }
        let chains = try query("SELECT id, head_generation, \(hex("head_hash")) FROM chains").map { (Int64($0[0]) ?? -1, Int($0[1]) ?? -1, $0[2]) }
        var ended: [Int64: [EndedToken]] = [:]
        for row in try query("SELECT chain_id, generation, \(hex("hash")), ended_by FROM tokens") {
            ended[Int64(row[0]) ?? -1, default: []].append(EndedToken(generation: Int(row[1]) ?? -1, hash: row[2], endedBy: row[3]))
        }
        var exchangeEvents: [Int64: Set<Int>] = [:], logins: [Int64: Int] = [:]
        for row in try query("SELECT chain_id, generation, kind FROM audit WHERE kind IN ('exchanged', 'exchange_retried', 'login_succeeded')") {
            guard let chain = Int64(row[0]) else { continue }
            if row[2] == "login_succeeded" { logins[chain, default: 0] += 1 } else { exchangeEvents[chain, default: []].insert(Int(row[1]) ?? -1) }
        }
        let heads = Dictionary(chains.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        let liveExchanged = ended.reduce(0) { count, chain in
            count + chain.value.filter { $0.endedBy == "exchanged" && $0.generation >= heads[chain.key] ?? Int.max }.count
        }
        if liveExchanged != 0 { problems.append("\(liveExchanged) exchanged tokens at or past their chain's head") }
        for (chain, head, headHash) in chains {
            let tokens = ended[chain] ?? []
            let generations = Set(tokens.map(\.generation))
            if generations.union([head]) != Set(0...max(head, 0)) { problems.append("chain \(chain): generations \(generations.sorted()) + head \(head) not contiguous") }
            let events = exchangeEvents[chain] ?? []
            if events != Set(head > 0 ? Array(1...head) : []) { problems.append("chain \(chain): exchanged events for generations \(events.sorted()), head \(head)") }
            if logins[chain, default: 0] != 1 { problems.append("chain \(chain): \(logins[chain, default: 0]) login events") }
            guard let ack = acknowledged[chain] else { continue }
            chainsChecked += 1
            let hash = TokenHash(of: ack.token).bytes.map { String(format: "%02x", $0) }.joined()
            if head == ack.generation {
                if headHash == hash { acknowledgedFound += 1 } else { problems.append("chain \(chain): head \(head) is not the acknowledged token") }
            } else if head == ack.generation + 1 {
                let superseded = tokens.filter { $0 == EndedToken(generation: ack.generation, hash: hash, endedBy: "exchanged") }.count
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

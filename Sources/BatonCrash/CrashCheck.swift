import BatonCore
import BatonStorage
import BatonStore
import Glibc

/// One crash state, reopened by Baton's own code (`TokenStore`, which runs SQLite's recovery)
/// and held to what was acknowledged before the crash.
package enum CrashCheck {
    /// What a crash state broke; empty: nothing.
    package static func problems(workload: CrashWorkload, crashPoint: Int, files: [String: [UInt8]], directory: String,
                                 mutant: CrashWorkload.Mutant?) throws -> [String] {
        for (name, bytes) in files { try CrashWorkload.write(bytes, to: directory + "/" + name) }
        let keyPath = KeyFile.defaultPath(forDatabase: workload.directory + "/baton.db")
        try CrashWorkload.write(try CrashWorkload.read(keyPath), to: KeyFile.defaultPath(forDatabase: directory + "/baton.db"))
        // Which steps were acknowledged before the crash: their marks came before it.
        var acknowledged = 0
        for op in workload.log.operations[..<crashPoint] { if case .mark(let number) = op { acknowledged = number + 1 } }
        // The one operation in flight at the crash (steps run one at a time) may have committed:
        // an exchange then superseded its chain's head, a reuse, logout or revocation revoked it.
        let inFlightStep = acknowledged < workload.steps.count ? workload.steps[acknowledged] : nil
        let inFlight = inFlightStep?.chain
        var inFlightAllows = ErrorCode.tokenSuperseded
        if case .revoked = inFlightStep { inFlightAllows = .chainRevoked }
        let promises = workload.steps[..<acknowledged]

        var problems: [String] = []
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let store: TokenStore
        do {
            store = try TokenStore(path: directory + "/baton.db", key: workload.key, policy: policy,
                                   options: CrashWorkload.options(mutant: mutant, create: false))
        } catch {
            return ["the database did not open after the crash: \(error)"]
        }

        var revoked: [ChainID: Bool] = [:]  // chain → by a reuse
        var last: [ChainID: String] = [:]
        var superseded: [(ChainID, String)] = []
        var keys: [UInt32] = []
        var loggedIn: [ChainID] = []
        for promise in promises {
            switch promise {
            case .issued(let chain, let token):
                last[chain] = token
                loggedIn.append(chain)
            case .exchanged(let chain, let parent, let child):
                last[chain] = child
                superseded.append((chain, parent))
            case .revoked(let chain, let reuse): revoked[chain] = reuse
            case .keyRotated(let id): keys.append(id)
            }
        }
        for (chain, token) in last.sorted(by: { $0.key < $1.key }) {
            do {
                _ = try store.verify(token)
                if revoked[chain] != nil { problems.append("chain \(chain): its acknowledged revocation was undone (its token verifies)") }
            } catch let error {
                if revoked[chain] != nil {
                    if case .chainRevoked = error {} else { problems.append("chain \(chain): revoked, but its token answers \(error)") }
                } else if chain == inFlight, error.code == inFlightAllows {
                    // the operation in flight at the crash (an exchange, a logout) may have committed
                } else {
                    problems.append("chain \(chain): its acknowledged head answers \(error) (an acknowledged login or exchange was lost)")
                }
            }
        }
        for (chain, token) in superseded {
            if (try? store.verify(token)) != nil { problems.append("chain \(chain): a token it exchanged (acknowledged) verifies again") }
        }
        let ring = (try? store.keyStatuses().map(\.row.id)) ?? []
        for id in keys where !ring.contains(id) { problems.append("token key \(id): its acknowledged rotation is not in the ring") }
        store.close()
        // The outbox holds every acknowledged revocation's events; and SQLite's own view of the file.
        let connection: Connection
        do { connection = try Connection(path: directory + "/baton.db") } catch {
            return problems + ["the database did not open again after Baton closed it: \(error)"]
        }
        defer { connection.close() }
        do {
            let outbox = try connection.statement("SELECT type, body FROM webhook_outbox").all { ($0.text(0), $0.text(1)) }
            for (chain, reuse) in revoked {
                let mentions = outbox.filter { $0.1.contains("\"chain_id\":\"\(chain)\"") }.map(\.0)
                if !mentions.contains("chain.revoked") { problems.append("chain \(chain): its acknowledged chain.revoked event is not in the outbox") }
                if reuse, !mentions.contains("token.reuse_detected") {
                    problems.append("chain \(chain): its acknowledged token.reuse_detected event is not in the outbox")
                }
            }
            // Each login is from a new device: its login.new_device event.
            for chain in loggedIn where !outbox.contains(where: { $0.0 == "login.new_device" && $0.1.contains("\"chain_id\":\"\(chain)\"") }) {
                problems.append("chain \(chain): its acknowledged login's login.new_device event is not in the outbox")
            }
            let integrity = try connection.statement("PRAGMA integrity_check").all { $0.text(0) }
            if integrity != ["ok"] { problems.append("integrity_check: \(integrity.prefix(3).joined(separator: "; "))") }
        } catch {
            problems.append("the outbox or integrity_check could not be read after the crash: \(error)")
        }
        return problems
    }
}

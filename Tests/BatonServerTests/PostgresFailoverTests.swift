import Foundation
import Testing

/// Failover under load, as Patroni would do it: a primary and a synchronous standby,
/// clients exchanging without pause through `baton serve` on a multi-host URI
/// (`target_session_attrs=read-write`), kill -9 of the primary, `pg_ctl promote` of the
/// standby. Baton finds the new primary by itself; afterwards every acknowledged exchange is
/// there, no consumed token verifies or exchanges, and during the gap every answer was a
/// quick 503, never a wrong one.
@Suite struct PostgresFailoverTests {
    /// What the run saw, checked by the test.
    struct Outcome: Sendable {
        var acknowledgedChecked = 0
        var lost = 0
        var problems: [String] = []
        /// From the postmaster's death to the first acknowledgement of an exchange sent after it.
        var recoverySeconds = 0.0
        /// How long `promoteStandby()` took (pg_ctl promote -w, then pg_is_in_recovery() false).
        var promotionSeconds = 0.0
        var gapAnswers = 0
        var slowestGapAnswer = 0.0
    }

    @Test func killingThePrimaryUnderLoadLosesNoAcknowledgedExchange() async throws {
        let cluster = try await PostgresCluster.start(.init(withSynchronousStandby: true))
        let outcome = try await offPool { try Self.failOver(cluster) }
        print("failover: \(outcome.acknowledgedChecked) acknowledged exchanges checked, \(outcome.lost) lost, "
              + "first exchange sent after the kill acknowledged \(String(format: "%.2f", outcome.recoverySeconds)) s after it "
              + "(pg_ctl promote -w plus the check that the standby left recovery: \(String(format: "%.2f", outcome.promotionSeconds)) s), "
              + "\(outcome.gapAnswers) answers 503 in the gap (slowest \(String(format: "%.2f", outcome.slowestGapAnswer)) s)")
        #expect(outcome.lost == 0)
        #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(20).joined(separator: "\n"))")
        #expect(outcome.acknowledgedChecked >= 200)
        #expect(outcome.gapAnswers > 0, "the clients saw the outage")
        // "Quickly": well under the clients' patience; a hang until a TCP timeout would fail this.
        #expect(outcome.slowestGapAnswer < 10, "a 503 took \(outcome.slowestGapAnswer) s")
    }

    /// Runs the whole scenario (blocking: off the cooperative pool).
    static func failOver(_ cluster: PostgresCluster) throws -> Outcome {
        let key = try SharedKeyFile()
        // A long retry grace: an exchange committed just before the kill whose answer was lost
        // is retried by the client as R3a, however long the gap lasted.
        let server = try ServerProcess(["--key-file", key.path, "--retry-grace", "300s", "--max-chains-per-user", "0", "--access-log", "off"],
                                       database: cluster.failoverURI())
        try server.addUser("alice")
        let logins = try (0..<6).map { index in
            let device = "load-\(index)"
            return (device: device, token: try server.login("alice", device: device)["token"] as! String)
        }
        let load = ExchangeLoad(port: server.port, logins: logins)
        load.start()
        var outcome = Outcome()
        guard eventually(within: 120, { load.acknowledgedCount >= 150 }) else {
            load.stop()
            return Outcome(problems: ["only \(load.acknowledgedCount) exchanges before the kill: \(load.refusals.prefix(3))"])
        }
        try cluster.killPrimary()  // returns once the postmaster is gone
        let killedAt = Date()
        try cluster.promoteStandby()
        outcome.promotionSeconds = Date().timeIntervalSince(killedAt)
        let recovered = eventually(within: 120) { load.firstSuccess(sentAfter: killedAt) != nil }
        let afterRecovery = load.acknowledgedCount
        _ = eventually(within: 60) { load.acknowledgedCount >= afterRecovery + 150 }
        load.stop()
        guard recovered, let firstSuccess = load.firstSuccess(sentAfter: killedAt) else {
            return Outcome(problems: ["no exchange succeeded after the promotion: \(load.refusals.suffix(3)); \(server.stderr.suffix(2000))"])
        }
        outcome.recoverySeconds = firstSuccess.timeIntervalSince(killedAt)
        for refusal in load.refusals {
            if refusal.status == 503 {
                outcome.gapAnswers += 1
                outcome.slowestGapAnswer = max(outcome.slowestGapAnswer, refusal.seconds)
            } else {
                outcome.problems.append("during the load: \(refusal.status) \(refusal.error)")
            }
        }
        try checkLineages(load.chains, on: server, into: &outcome)
        return outcome
    }

    /// Every acknowledged token but the newest of its chain is superseded, the newest is the
    /// one live token; then each chain's first consumed token is caught as reuse.
    static func checkLineages(_ chains: [ExchangeLoad.Chain], on server: ServerProcess, into outcome: inout Outcome) throws {
        for (index, chain) in chains.enumerated() {
            var live = 0
            for (generation, token) in chain.acknowledged.enumerated() {
                let answer = try server.request("GET", "/v1/verify", token: token)
                let isNewest = generation == chain.acknowledged.count - 1
                if answer.status == 200 { live += 1 }
                if isNewest && answer.status != 200 {
                    outcome.lost += 1
                    outcome.problems.append("chain \(index): the newest acknowledged token answers \(answer.status) \(answer.error ?? "")")
                } else if !isNewest && answer.error != "token_superseded" {
                    outcome.lost += 1  // a consumed token that is live again: its exchange was lost
                    outcome.problems.append("chain \(index): consumed token \(generation) answers \(answer.status) \(answer.error ?? "")")
                }
            }
            outcome.acknowledgedChecked += chain.acknowledged.count - 1  // the login token is not an exchange
            if live > 1 { outcome.problems.append("chain \(index): \(live) live tokens") }
            guard chain.acknowledged.count >= 2 else { continue }
            let replay = try server.request("POST", "/v1/exchange", token: chain.acknowledged[0])
            if replay.error != "token_reused" { outcome.problems.append("chain \(index): replaying its first token answers \(replay.status) \(replay.error ?? "")") }
            let head = try server.request("GET", "/v1/verify", token: chain.acknowledged.last!)
            if head.error != "chain_revoked" { outcome.problems.append("chain \(index): after the reuse its head answers \(head.status) \(head.error ?? "")") }
        }
    }
}

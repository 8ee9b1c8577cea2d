import Foundation
import Synchronization
import Testing

/// Three `baton serve` instances on one PostgreSQL database, sharing one key, behind a real
/// nginx running round-robin over them (the shipped proxy rules): the database alone decides
/// each chain, whichever instance a request reaches.
@Suite(.serialized) struct PostgresInstancesTests {
    /// The cluster, the instances and nginx of one test.
    final class Deployment: Sendable {
        let cluster: PostgresCluster
        let key: SharedKeyFile
        let instances: [ServerProcess]
        let app: EchoApplication
        let nginx: NginxProcess

        init(cluster: PostgresCluster) throws {
            self.cluster = cluster
            let key = try SharedKeyFile()
            self.key = key
            // nginx connects from 127.0.0.1; the racing clients come from other loopback addresses.
            instances = try (0..<3).map { _ in
                try ServerProcess(["--key-file", key.path, "--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"], database: cluster.uri())
            }
            try instances[0].addUser("alice")
            app = try EchoApplication()
            nginx = try NginxProcess(batonPorts: instances.map(\.port), appPort: app.port)
        }
    }

    @Test func racingExchangesThroughDifferentInstancesLeaveAtMostOneLiveTokenPerChain() async throws {
        let cluster = try await PostgresCluster.start()
        let problems = try await offPool { () -> [String] in
            let deployment = try Deployment(cluster: cluster)
            var problems: [String] = []
            for chain in 0..<24 {
                // Its own source address per chain: the login rate limit is per client address.
                let login = try deployment.nginx.request("POST", "/v1/login", from: "127.0.2.\(chain + 1)",
                                                         json: #"{"username":"alice","password":"correct horse battery","device_id":"race-\#(chain)"}"#)
                guard login.status == 200, let token = login.json["token"] as? String else {
                    problems.append("chain \(chain): login \(login.status) \(login.text)")
                    continue
                }
                // Each racer's answer: the new token of a 200, else "status error".
                let answers = Mutex<[(token: String?, outcome: String)]>([])
                race(threads: 8) { racer in
                    let answer = try? deployment.nginx.request("POST", "/v1/exchange", from: "127.0.3.\(racer + 1)", token: token)
                    let outcome = answer.map { "\($0.status) \($0.error ?? "")" } ?? "no answer"
                    answers.withLock { $0.append((answer?.status == 200 ? answer?.json["token"] as? String : nil, outcome)) }
                }
                let all = answers.withLock { $0 }
                let winners = all.compactMap(\.token)
                let others = Set(all.filter { $0.token == nil }.map(\.outcome))
                if winners.count != 1 { problems.append("chain \(chain): \(winners.count) exchanges succeeded") }
                if !others.isSubset(of: ["401 token_reused", "401 chain_revoked"]) { problems.append("chain \(chain): answers \(others)") }
                let tokens = [token] + winners
                let live = try tokens.filter { try deployment.nginx.request("GET", "/v1/verify", from: "127.0.2.\(chain + 1)", token: $0).status == 200 }
                if live.count > 1 { problems.append("chain \(chain): \(live.count) live tokens") }
            }
            // Round-robin really spread the races: every instance answered exchanges.
            for (index, instance) in deployment.instances.enumerated() where !instance.stdout.contains("/v1/exchange") {
                problems.append("instance \(index) served no exchange")
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func reuseIsDetectedByAnotherInstanceThanTheExchangingOne() async throws {
        let cluster = try await PostgresCluster.start()
        let answers = try await offPool { () -> [String] in
            let deployment = try Deployment(cluster: cluster)
            let (first, second, third) = (deployment.instances[0], deployment.instances[1], deployment.instances[2])
            let original = try first.login("alice", device: "phone")["token"] as! String
            let exchanged = try second.request("POST", "/v1/exchange", token: original)
            let successor = exchanged.json["token"] as? String
            let replay = try third.request("POST", "/v1/exchange", token: original)
            let afterwards = try first.request("GET", "/v1/verify", token: successor)
            return ["\(exchanged.status)", "\(replay.status) \(replay.error ?? "")",
                    "\(afterwards.status) \(afterwards.error ?? "") \(afterwards.json["reason"] as? String ?? "")"]
        }
        #expect(answers == ["200", "401 token_reused", "401 chain_revoked reuse_detected"])
    }
}

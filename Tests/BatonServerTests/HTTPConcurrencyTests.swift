@testable import BatonCore
@testable import BatonStore
import Foundation
import Glibc
import Synchronization
import Testing

/// The invariant over HTTP, and kill -9 under load.
@Suite(.serialized)
struct HTTPConcurrencyTests {
    @Test func racingExchangesOverSeparateConnectionsLeaveAtMostOneVerifyingToken() throws {
        let server = try ServerProcess(["--max-chains-per-user", "0"])
        try server.addUser("alice")
        for round in 0..<50 {
            let token = try server.login()["token"] as! String
            let winners = Mutex<[String]>([])
            let codes = Mutex<[String]>([])
            // Half the rounds as the chain's own device (R3a retries may apply), half without.
            let headers: [(String, String)] = round % 2 == 0 ? [("X-Device-Id", "phone-1")] : []
            let connections = try (0..<32).map { _ in try server.connect() }
            race(threads: 32) { index in
                guard let response = try? connections[index].request("POST", "/v1/exchange", token: token, headers: headers) else {
                    codes.withLock { $0.append("transport") }
                    return
                }
                if response.status == 200 { winners.withLock { $0.append(response.json["token"] as! String) } }
                codes.withLock { $0.append(response.error ?? "ok") }
            }
            connections.forEach { $0.close() }
            let won = winners.withLock { $0 }
            #expect(!won.isEmpty, "round \(round)")
            #expect(!codes.withLock { $0 }.contains("transport"), "round \(round)")
            if round % 2 == 1 { #expect(won.count == 1, "round \(round): without a device id only one exchange wins") }
            let verifying = try (won.reversed() + [token]).filter { try server.request("GET", "/v1/verify", token: $0).status == 200 }
            #expect(verifying.count <= 1, "round \(round)")
        }
    }

    @Test func killDashNineLosesNothingAcknowledged() throws {
        let server = try ServerProcess(["--max-chains-per-user", "0", "--access-log", "off"])
        try server.addUser("alice")
        let chains = 16
        let heads = Mutex(try (0..<chains).map { try server.login(device: "d\($0)")["token"] as! String })
        let acknowledged = Mutex([[String]](repeating: [], count: chains))
        let total = Atomic<Int>(0)
        let killed = Atomic<Bool>(false)
        let port = server.port
        race(threads: chains + 1) { index in
            if index == chains {
                // The killer: waits until enough exchanges were acknowledged, then SIGKILL mid-load.
                while total.load(ordering: .relaxed) < 600 { usleep(1000) }
                server.process.send(SIGKILL)
                killed.store(true, ordering: .relaxed)
                return
            }
            guard let connection = try? HTTPConnection(port: port) else { return }
            defer { connection.close() }
            while !killed.load(ordering: .relaxed) {
                let token = heads.withLock { $0[index] }
                guard let response = try? connection.request("POST", "/v1/exchange", token: token), response.status == 200,
                      let next = response.json["token"] as? String else { return }
                heads.withLock { $0[index] = next }
                acknowledged.withLock { $0[index].append(next) }
                total.add(1, ordering: .relaxed)
            }
        }
        server.process.waitUntilExit()
        #expect(server.process.terminationReason == .uncaughtSignal)

        // Restart on the same database; nothing acknowledged may be lost.
        let restarted = try ServerProcess(["--max-chains-per-user", "0"], directory: server.directory)
        let sawInFlight = Atomic<Int>(0)
        for chain in 0..<chains {
            let acks = acknowledged.withLock { $0[chain] }
            guard let newest = acks.last else { continue }
            let answer = try restarted.request("GET", "/v1/verify", token: newest)
            if answer.status == 200 || answer.error == "token_expired" { continue }
            // The only other acceptable answer: one more exchange had committed when the kill hit.
            #expect(answer.error == "token_superseded", "chain \(chain): \(answer.text)")
            sawInFlight.add(1, ordering: .relaxed)
            for older in acks.dropLast().suffix(3) {
                #expect(try restarted.request("GET", "/v1/verify", token: older).error == "token_superseded")
            }
        }
        for chain in 0..<chains {
            for older in acknowledged.withLock({ $0[chain] }).dropLast().suffix(3) {
                #expect(try restarted.request("GET", "/v1/verify", token: older).error == "token_superseded")
            }
        }
        #expect(total.load(ordering: .relaxed) >= 600)
        _ = sawInFlight
    }
}

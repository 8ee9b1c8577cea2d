import BatonCore
import Foundation
import Synchronization
import Testing

/// Issue 28, finding 3: a refused bound verify made a durable write on the event loop, so 32
/// connections of refused verifies took everyone's verify p50 from 0.13 to 12.2 ms. A
/// measurement, not a pass/fail bound (a shared machine's load moves it): run it with
/// `BATON_MEASURE=1 swift test --skip-build --filter DPoPRefusalLatencyTests`; docs/security.md
/// has the numbers.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["BATON_MEASURE"] == "1"))
struct DPoPRefusalLatencyTests {
    /// `wrong key`: the victim's real token with a proof by another key (a valid signature: the
    /// whole check, then the refusal and its audit). `made-up token`: a token whose MAC fails,
    /// with a good proof (finding 6: refused before the signature is looked at).
    @Test(arguments: ["wrong key", "made-up token"])
    func othersVerifyDuringARefusedProofFlood(_ flood: String) async throws {
        let server = try await ServerProcess.start(on: .sqlite)
        let report = try await offPool { () throws -> String in
            try server.addUser("alice")
            try server.addUser("bob")
            let token = try server.boundLogin(Device())["token"] as! String
            let bob = try server.request("POST", "/v1/login", json: #"{"username":"bob","password":"correct horse battery","device_id":"b","device_class":"web"}"#)
            let bobToken = bob.json["token"] as! String
            // One refused proof per flooding connection, sent again and again: a thief's key,
            // a valid signature, so each costs the server the whole check and a refusal.
            let port = server.port
            let refusals = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
            let measured = Mutex(Latencies())
            @Sendable func sample() {
                guard let connection = try? HTTPConnection(port: port) else { return }
                defer { connection.close() }
                var latencies = Latencies()
                for _ in 0..<400 {
                    let (response, seconds) = timed { try? connection.request("GET", "/v1/verify", token: bobToken) }
                    if response?.status == 200 { latencies.record(seconds) }
                }
                measured.withLock { $0.append(latencies) }
            }
            sample()  // quiet: the baseline
            let quiet = measured.withLock { $0.percentile(0.5) }
            measured.withLock { $0 = Latencies() }
            let floodThreads = 32
            let started = Date()
            race(threads: floodThreads + 1) { thread in
                if thread == floodThreads {
                    usleep(200_000)
                    sample()
                    stop.store(true, ordering: .relaxed)
                    return
                }
                guard let connection = try? HTTPConnection(port: port) else { return }
                defer { connection.close() }
                let headers = Device().headers("GET", "/v1/verify", token: flood == "wrong key" ? token : "bt1_made-up")
                while !stop.load(ordering: .relaxed) {
                    if (try? connection.request("GET", "/v1/verify", headers: headers))?.status == 401 { refusals.add(1, ordering: .relaxed) }
                }
            }
            let seconds = Date().timeIntervalSince(started)
            let during = measured.withLock { $0 }
            let events = try server.auditEvents("proof_failed").count
            return "\(flood)" + String(format: ": bob's verify p50 %.2f ms quiet, %.2f ms (p99 %.2f ms) during %d refused verifies in %.1f s on %d connections; %d proof_failed events",
                          quiet, during.percentile(0.5), during.percentile(0.99), refusals.load(ordering: .relaxed), seconds, floodThreads, events)
        }
        print(report)
    }
}

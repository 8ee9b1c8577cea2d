@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Two processes on one file store (an app and its extension, on Linux) exchange a token once.
@Suite(.ownThreads) struct TwoProcessTests {
    @Test func twoProcessesHittingAnExpiredTokenAtTheSameMomentExchangeOnce() async throws {
        let server = try startServer()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storePath = directory + "/credentials.json"
        let session = makeSession(server.baseURL, store: FileCredentialStore(path: storePath))
        try await session.loginAlice()

        for round in 1...4 {
            #expect(try FileCredentialStore(path: storePath).load()?.bundle?.generation == round - 1)
            let before = try server.exchangeCount()
            // Each round's probes run a clock further ahead, past the stored token's expiry.
            let probes = try (0..<2).map { _ in
                try Probe(baseURL: server.baseURL, store: storePath, path: "/v1/verify", requests: 5, clockOffset: Double(round) * pastTheLifetime)
            }
            for probe in probes { #expect(try await probe.awaitReady(), "round \(round)") }
            for probe in probes { probe.go() }  // both start at once
            for probe in probes {
                let (status, output) = await probe.finish()
                #expect(status == 0, "round \(round): \(output)")
                #expect(output.components(separatedBy: "ok 200").count - 1 == 5, "round \(round): \(output)")
            }
            #expect(try server.exchangeCount() - before == 1, "round \(round)")
            #expect(try FileCredentialStore(path: storePath).load()?.bundle?.generation == round, "round \(round)")
        }
        #expect(try !server.auditKinds().contains("reuse_detected"))
    }

    /// Issue 29, H1: the owner of the exchange claim is stopped (an app suspended by iOS) after
    /// the server committed its exchange and before the answer reached it, past its lease; the
    /// other process (an extension) takes the claim over, and its retry (R3a) replaces the
    /// successor. When the owner resumes and reads its own successor, it used to present it:
    /// `exchanged -> exchange_retried -> fork_detected -> chain_revoked`, both logged out. Now
    /// the owner adopts the head the store holds and nothing is revoked.
    @Test func ownerStoppedPastItsLeaseWhileItsAnswerIsHeldAdoptsTheTakeoversSuccessor() async throws {
        let server = try startServer()  // the default 10 s retry grace
        let relay = try TCPRelay(to: server.port, fault: .hold)
        defer { relay.close() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storePath = directory + "/credentials.json"
        try await makeSession(server.baseURL, store: FileCredentialStore(path: storePath)).loginAlice()

        let owner = try Probe(baseURL: URL(string: "http://127.0.0.1:\(relay.port)")!, store: storePath, path: "/v1/verify",
                              requests: 2, clockOffset: pastTheLifetime)
        #expect(try await owner.awaitReady())
        owner.go()
        #expect(await eventuallyAsync(within: 30) { relay.faultedAnswers == 1 })  // committed; its answer held
        owner.signal(SIGSTOP)
        defer { owner.signal(SIGCONT) }

        let taker = try Probe(baseURL: server.baseURL, store: storePath, path: "/v1/verify", requests: 2, clockOffset: pastTheLifetime)
        #expect(try await taker.awaitReady())
        taker.go()  // waits out the owner's lease, then takes over
        let (takerStatus, takerOutput) = await taker.finish()
        #expect(takerStatus == 0, "\(takerOutput)")

        relay.release()  // the owner's answer is in its socket when it resumes
        owner.signal(SIGCONT)
        let (ownerStatus, ownerOutput) = await owner.finish()
        #expect(ownerStatus == 0, "\(ownerOutput)")

        let kinds = try server.auditKinds()
        #expect(kinds.contains("exchange_retried"), "\(kinds)")  // the takeover's retry replaced the successor
        #expect(!kinds.contains("fork_detected") && !kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
        let head = try #require(try FileCredentialStore(path: storePath).load()?.bundle)
        let key = try FileCredentialStore(path: storePath).deviceKey(creating: false)
        #expect(try server.verifyAnswer(head.token, key: key) == "ok", "\(kinds) \(takerOutput) \(ownerOutput)")
    }
}

/// A `baton-client-probe` process: restores from the store, prints "ready", waits for "go".
///
/// Its end is its output's end, and its status the "exit N" line it prints last. (This dates
/// from Foundation's `Process`, whose child monitoring on Linux could miss one of two children
/// exiting at the same moment and wait forever; `ChildProcess` waits for each child on a
/// thread of its own, but the printed status is still what the test reads.)
final class Probe: @unchecked Sendable {
    private let process = ChildProcess()
    private let input = Pipe()
    private let lock = NSLock()
    private var output = ""
    private let outputEnded = DispatchSemaphore(value: 0)

    /// Starts a probe on `store`, sending `requests` GETs of `path` once released.
    convenience init(baseURL: URL, store: String, path: String, requests: Int, clockOffset: TimeInterval) throws {
        try self.init(arguments: [baseURL.absoluteString, store, path, String(requests), String(clockOffset)])
    }

    /// Starts a probe with its command line (`--device-key <store>`: make or load the key).
    init(arguments: [String]) throws {
        process.executableURL = productsDirectory.appendingPathComponent("baton-client-probe")
        process.arguments = arguments
        let out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = out
        try process.run()
        Thread { [self] in
            while true {
                let data = out.fileHandleForReading.availableData
                if data.isEmpty { break }
                lock.lock()
                output += String(decoding: data, as: UTF8.self)
                lock.unlock()
            }
            outputEnded.signal()
        }.start()
    }

    /// Everything the probe printed so far.
    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return output
    }

    /// Waits until the probe has restored its session.
    func awaitReady() async throws -> Bool {
        await eventuallyAsync(within: 60) { self.text.contains("ready") }
    }

    /// Sends `signal` to the probe's process (SIGSTOP, SIGCONT: an app suspended and resumed).
    func signal(_ signal: Int32) { process.send(signal) }

    /// Releases the probe.
    func go() {
        input.fileHandleForWriting.write(Data("go\n".utf8))
    }

    /// Tells a probe started with an interval to stop after its current request (nothing once
    /// it has exited: its end of the pipe is closed).
    func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: Data("stop\n".utf8))
    }

    /// Stops the probe's process if it still runs (a test that failed before `finish`).
    func terminate() { process.terminate() }

    /// Waits for the end of the output (at most 60 s; then the probe is killed); the status the
    /// probe printed (-1 when it printed none) and everything it printed.
    func finish() async -> (Int32, String) {
        await withCheckedContinuation { continuation in
            Thread { [self] in
                if outputEnded.wait(timeout: .now() + 60) == .timedOut {
                    process.terminate()
                    outputEnded.wait()
                }
                let output = text
                let status = output.split(separator: "\n").last { $0.hasPrefix("exit ") }.flatMap { Int32($0.dropFirst(5)) } ?? -1
                continuation.resume(returning: (status, output))
            }.start()
        }
    }
}

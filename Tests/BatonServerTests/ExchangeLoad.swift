import Foundation
import Synchronization

/// Clients exchanging without pause, each on a thread of its own and walking a chain of its
/// own, recording every answer: the acknowledged tokens of each chain in order (a 200's
/// token), and the status, error and latency of every other answer. After a 503 a client
/// sends the same token again with its device id, as the client library does (a lost
/// answer is then an R3a retry). Runs until `stop()`.
final class ExchangeLoad: Sendable {
    /// One client's chain: the login token, then every token an exchange acknowledged.
    struct Chain: Sendable {
        var device: String
        var acknowledged: [String]
    }

    /// One answer other than 200.
    struct Refusal: Sendable {
        var status: Int
        var error: String
        var sentAt: Date
        var seconds: Double
    }

    private struct State {
        var chains: [Chain]
        var refusals: [Refusal] = []
        var successes: [(sentAt: Date, answeredAt: Date)] = []
    }

    private let port: UInt16
    private let state: Mutex<State>
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchGroup()

    /// `logins`: each client's device id and login token.
    init(port: UInt16, logins: [(device: String, token: String)]) {
        self.port = port
        state = Mutex(State(chains: logins.map { Chain(device: $0.device, acknowledged: [$0.token]) }))
    }

    /// Starts one thread per chain.
    func start() {
        let count = state.withLock { $0.chains.count }
        for index in 0..<count {
            finished.enter()
            Thread { [self] in
                while !stopping.load(ordering: .relaxed) { exchangeOnce(index) }
                finished.leave()
            }.start()
        }
    }

    /// Stops the clients and waits until each has its last answer (blocking: call off the pool).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    var chains: [Chain] { state.withLock { $0.chains } }
    var refusals: [Refusal] { state.withLock { $0.refusals } }
    /// Exchanges acknowledged so far.
    var acknowledgedCount: Int { state.withLock { $0.successes.count } }
    /// When the earliest acknowledgement of an exchange sent after `moment` arrived.
    func firstSuccess(sentAfter moment: Date) -> Date? {
        state.withLock { $0.successes.filter { $0.sentAt > moment }.map(\.answeredAt).min() }
    }

    private func exchangeOnce(_ index: Int) {
        let (device, token) = state.withLock { ($0.chains[index].device, $0.chains[index].acknowledged.last!) }
        let sent = Date()
        let response: HTTPConnection.Response
        do {
            let connection = try HTTPConnection(port: port, timeoutSeconds: 60)
            defer { connection.close() }
            response = try connection.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", device)])
        } catch {
            record(Refusal(status: 0, error: "transport: \(error)", sentAt: sent, seconds: Date().timeIntervalSince(sent)))
            usleep(100_000)  // the server itself is unreachable: a failure already; do not spin on it
            return
        }
        if response.status == 200, let next = response.json["token"] as? String {
            state.withLock {
                $0.chains[index].acknowledged.append(next)
                $0.successes.append((sent, Date()))
            }
        } else {
            record(Refusal(status: response.status, error: response.error ?? response.text, sentAt: sent, seconds: Date().timeIntervalSince(sent)))
            if response.status != 503 { usleep(100_000) }  // a wrong answer is a failure already; do not spin on it
        }
    }

    private func record(_ refusal: Refusal) { state.withLock { $0.refusals.append(refusal) } }
}

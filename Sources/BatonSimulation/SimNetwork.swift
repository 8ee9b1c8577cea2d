@_spi(Simulation) import BatonClient
import BatonHTTP
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The network between the device and the server: each request and each answer delivered
/// after a latency, or held long, lost, duplicated (the client reads one copy's answer, either
/// one: a gateway's resend), or cut after the server answered. Everything happens on simulated
/// time through the simulation's timers; the server is called synchronously when a request
/// arrives. A request whose process died is still delivered (the server cannot know); its
/// answer goes nowhere.
extension SimWorld {
    /// The round trip process `process` sends through (`ClientEnvironment.Network.roundTrip`).
    func roundTrip(for process: SimProcess) -> ClientEnvironment.RoundTrip {
        { [self] request in await send(request, from: process) }
    }

    private func send(_ request: URLRequest, from process: SimProcess) async -> Result<(Data, HTTPURLResponse), BatonClientError> {
        let answer = PendingAnswer()
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<(Data, HTTPURLResponse), BatonClientError>, Never>) in
                answer.install(continuation)
                // The request's own timeout, as URLSession applies it (an exchange attempt's
                // is an hour: the exchange cancels it first, when its next attempt goes out).
                let timeout = Duration.milliseconds(Int64(request.timeoutInterval * 1000))
                SimClock.schedule(after: timeout) {
                    answer.fulfil(.failure(.transport(code: URLError.timedOut.rawValue, description: "timed out (simulated)")))
                }
                dispatch(request, from: process, answer: answer)
            }
        } onCancel: {
            answer.fulfil(.failure(.cancelled))
        }
    }

    private func dispatch(_ request: URLRequest, from process: SimProcess, answer: PendingAnswer) {
        let serial = nextSerial()
        let label = "p\(process.id) r\(serial)"
        if fault(mix.requestDrop, "\(label) request lost", process: process.id) { return }
        let copies = fault(mix.duplicate, "\(label) request duplicated", process: process.id) ? 2 : 1
        let answered = copies == 2 ? random.int(0...1) : 0  // the copy whose answer the client reads
        for copy in 0..<copies {
            let delay = latency() + (copy == 1 ? random.duration(.zero, .seconds(2)) : .zero)
            SimClock.schedule(after: delay) { [self] in
                let response = deliver(request, from: .honest(process.id), label: copy == 0 ? label : label + "'")
                guard copy == answered else {
                    noteFate(of: response, .lostByNetwork)  // the copy whose answer nobody reads
                    return
                }
                returnAnswer(response, to: request, for: process, answer: answer, label: label)
            }
        }
    }

    /// The server's answer on its way back: cut, lost, or delivered after a latency (held
    /// while the process is suspended; never, once it died).
    private func returnAnswer(_ response: HTTPResponse, to request: URLRequest, for process: SimProcess,
                              answer: PendingAnswer, label: String) {
        if mix.answerReset > 0, random.chance(mix.answerReset) {
            log("\(label) connection reset after the answer")
            noteFate(of: response, .lostByNetwork)
            SimClock.schedule(after: .milliseconds(random.int(1...50))) {
                answer.fulfil(.failure(.transport(code: URLError.networkConnectionLost.rawValue, description: "connection reset (simulated)")))
            }
            return
        }
        if fault(mix.answerDrop, "\(label) answer lost", process: process.id) {
            noteFate(of: response, .lostByNetwork)
            return
        }
        let url = request.url ?? URL(string: SimServer.publicURL)!
        let headers = Dictionary(response.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        let http = HTTPURLResponse(url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: headers)!
        let data = Data(response.body)
        SimClock.schedule(after: latency()) { [self] in arrive(.success((data, http)), response, at: process, answer: answer, held: false) }
    }

    /// Hands an answer to its process: held while it is suspended, dropped once it died.
    private func arrive(_ result: PendingAnswer.Answer, _ response: HTTPResponse, at process: SimProcess, answer: PendingAnswer, held: Bool) {
        guard !process.isDead else {
            noteFate(of: response, .lostByNetwork)
            return
        }
        if let resume = process.suspendedUntil, resume > SimClock.now {
            noteFate(of: response, .heldWhileSuspended)
            SimClock.schedule(at: resume) { [self] in arrive(result, response, at: process, answer: answer, held: true) }
            return
        }
        // An answer the client no longer waited for was thrown away by the client, unless the
        // world held it (a suspension: the client's own deadline fired at the same resume).
        noteFate(of: response, answer.fulfil(result) ? .read : (held ? .lostByNetwork : .discardedByClient))
    }

    /// What became of the answer that carried a successor (the observer's "never received").
    private func noteFate(of response: HTTPResponse, _ fate: AnswerFate) {
        guard response.status == 200,
              let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
              let token = body["token"] as? String else { return }
        observed.answerFates[token] = fate
    }

    /// One way's delay: a few to a hundred milliseconds, sometimes held long.
    private func latency() -> Duration {
        let base = Duration.milliseconds(random.int(mix.latencyMs))
        return mix.slow > 0 && random.chance(mix.slow) ? base + random.duration(.zero, mix.slowMax) : base
    }

    /// Hands `request` to the server now and observes its answer.
    func deliver(_ request: URLRequest, from party: Party, label: String) -> HTTPResponse {
        let httpRequest = HTTPRequest(
            method: request.httpMethod ?? "GET",
            target: (request.url?.path ?? "/") + (request.url?.query.map { "?" + $0 } ?? ""),
            headers: (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key.lowercased(), $0.value) },
            body: request.httpBody.map(Array.init) ?? [])
        let response = server.respond(to: httpRequest)
        observe(httpRequest, response, from: party, label: label)
        return response
    }
}

/// One request's answer: fulfilled once, by the network or by the caller's cancellation,
/// whichever comes first (both on the simulation's driving thread).
final class PendingAnswer: @unchecked Sendable {
    typealias Answer = Result<(Data, HTTPURLResponse), BatonClientError>
    private var continuation: UnsafeContinuation<Answer, Never>?
    private var early: Answer?
    private var isDone = false

    func install(_ continuation: UnsafeContinuation<Answer, Never>) {
        if let early {
            isDone = true
            continuation.resume(returning: early)
        } else {
            self.continuation = continuation
        }
    }

    /// Delivers `answer` unless one was delivered already; whether this one was.
    @discardableResult
    func fulfil(_ answer: Answer) -> Bool {
        guard !isDone else { return false }
        guard let continuation else {
            guard early == nil else { return false }
            early = answer
            return true
        }
        isDone = true
        self.continuation = nil
        continuation.resume(returning: answer)
        return true
    }
}

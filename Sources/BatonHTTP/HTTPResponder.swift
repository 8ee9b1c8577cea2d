import Dispatch
import Synchronization

/// Problems the server answers on its own, before or instead of a handler.
package enum ServerRejection: Sendable, Equatable {
    /// The bytes are not a valid request (400/413/431/505, then close).
    case malformed(HTTPParseError)
    /// The request did not arrive in time (408, then close).
    case timeout
    /// Too many connections (503, then close).
    case overloaded
}

/// What the server calls for each request. The API layer implements it; the server knows
/// nothing of tokens.
package protocol HTTPResponder: Sendable {
    /// The response to a parsed request from `peer`.
    func respond(to request: HTTPRequest, from peer: IPAddress) -> HTTPResponse
    /// The response to a request the server refused (the connection is closed after it).
    func respond(to rejection: ServerRejection, from peer: IPAddress) -> HTTPResponse
    /// Whether answering may block for long (a password hash, waiting for a durable commit):
    /// such requests go to the worker pool; the others are answered on the event loop.
    func mayBlock(_ request: HTTPRequest) -> Bool
    /// A request `mayBlock` left to the event loop: its response, or, when it turns out to need
    /// a wait after all (verify of a token its memory cannot answer), the rest of the work for
    /// a worker. What was done on the loop is not done again.
    func respondOnLoop(to request: HTTPRequest, from peer: IPAddress) -> LoopAnswer
}

/// What the event loop does with a request it began answering.
package enum LoopAnswer: Sendable {
    /// Written at once.
    case response(HTTPResponse)
    /// Run on the worker pool; its response is written when it returns.
    case onWorker(@Sendable () -> HTTPResponse)
    /// Started on the loop; when its work is done, from any thread and exactly once, it hands
    /// the function it is given what makes its response, and the loop makes it. No loop or
    /// worker waits meanwhile (an exchange on SQLite: the group-commit writer hands on each
    /// answer after the commit and goes on with the next batch; the loops write the answers).
    case later(@Sendable (_ answer: @escaping @Sendable (_ response: @escaping @Sendable () -> HTTPResponse) -> Void) -> Void)
}

extension LoopAnswer {
    /// The response, on the caller's thread, waiting for it where it comes later: what the
    /// event loop would write, for a caller without one (the deterministic simulation).
    package func waitedFor() -> HTTPResponse {
        switch self {
        case .response(let response): return response
        case .onWorker(let rest): return rest()
        case .later(let start):
            let answered = Mutex<(@Sendable () -> HTTPResponse)?>(nil)
            let done = DispatchSemaphore(value: 0)
            start { response in
                answered.withLock { $0 = response }
                done.signal()
            }
            done.wait()
            return answered.withLock { $0 }!()
        }
    }
}

extension HTTPResponder {
    /// A responder that never defers answers every loop request at once.
    package func respondOnLoop(to request: HTTPRequest, from peer: IPAddress) -> LoopAnswer {
        .response(respond(to: request, from: peer))
    }
}

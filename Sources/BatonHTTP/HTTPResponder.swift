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
}

import Foundation

// Standard-library API that iOS 16's SDK (Swift 5.8 interfaces) lacks or types differently.
// The client is written against that SDK, the oldest it supports, so that it compiles with
// every Xcode from there on (docs/client.md, "What was compiled where").

extension Result {
    /// The success value, or the failure thrown as its own type. (`Result.get()` throws
    /// `any Error` in SDKs older than Swift 6's standard library.)
    func value() throws(Failure) -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }
}

/// A new stream and its continuation, as `AsyncStream.makeStream(of:bufferingPolicy:)` (Swift
/// 5.9) returns them.
func makeAsyncStream<Element>(
    of _: Element.Type, bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy
) -> (stream: AsyncStream<Element>, continuation: AsyncStream<Element>.Continuation) {
    var continuation: AsyncStream<Element>.Continuation?
    // The build closure runs before init returns.
    let stream = AsyncStream(Element.self, bufferingPolicy: bufferingPolicy) { continuation = $0 }
    return (stream, continuation!)
}

/// An immutable value of a type that an older SDK does not declare `Sendable` although it is
/// safe to share (CryptoKit's signing keys: immutable values whose signing takes no shared
/// mutable state; newer SDKs declare them `Sendable`).
struct SendableValue<Value>: @unchecked Sendable {
    let value: Value
}

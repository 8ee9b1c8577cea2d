// A stand-in for Alamofire 5.10's interceptor API, for type-checking docs/client.md's adapter
// sample for iOS (scripts/check-client-ios): the declarations the sample uses, with the
// signatures of Alamofire 5.10's sources (Source/Features/RequestInterceptor.swift,
// Source/Core/Request.swift, Source/Core/Session.swift), bodies left out. Not a copy of
// Alamofire: nothing here runs, and the package never depends on it (issue 42, F9).
import Foundation

/// Alamofire's `RequestAdapter` (5.10: Sendable, `@Sendable` completion).
public protocol RequestAdapter: Sendable {
    func adapt(_ urlRequest: URLRequest, for session: Session, completion: @escaping @Sendable (_ result: Result<URLRequest, any Error>) -> Void)
}

/// Alamofire's `RetryResult`.
public enum RetryResult: Sendable {
    case retry
    case retryWithDelay(TimeInterval)
    case doNotRetry
    case doNotRetryWithError(any Error)
}

/// Alamofire's `RequestRetrier` (5.10: Sendable, `@Sendable` completion).
public protocol RequestRetrier: Sendable {
    func retry(_ request: Request, for session: Session, dueTo error: any Error, completion: @escaping @Sendable (RetryResult) -> Void)
}

/// Alamofire's `RequestInterceptor`.
public protocol RequestInterceptor: RequestAdapter, RequestRetrier {}

/// Alamofire's `Request` (5.10: `@unchecked Sendable`), the members the sample reads.
public class Request: @unchecked Sendable {
    public var request: URLRequest? { nil }
    public var response: HTTPURLResponse? { nil }
    public var retryCount: Int { 0 }
}

/// Alamofire's `DataRequest`.
public class DataRequest: Request, @unchecked Sendable {
    public var data: Data? { nil }
}

/// Alamofire's `Session`, the initializer the sample calls.
open class Session: @unchecked Sendable {
    public init(configuration: URLSessionConfiguration = .default, interceptor: (any RequestInterceptor)? = nil) {}
}

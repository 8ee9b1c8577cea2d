import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The per-task delegate of every request the session sends: a redirect to another origin
/// than the base URL's goes out without `Authorization` and `X-Device-Id` (a presigned
/// download, a CDN, a hostile redirect must not receive a token it could exchange).
final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    private let origin: Origin?

    /// A guard keeping credentials within `origin`.
    init(origin: Origin?) { self.origin = origin }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(Self.redirected(request, within: origin))
    }

    /// `request` (a redirect's target) without the session's credentials unless it stays within `origin`.
    static func redirected(_ request: URLRequest, within origin: Origin?) -> URLRequest {
        guard let origin, origin.contains(request.url) else {
            var stripped = request
            stripped.setValue(nil, forHTTPHeaderField: "Authorization")
            stripped.setValue(nil, forHTTPHeaderField: "X-Device-Id")
            return stripped
        }
        return request
    }
}

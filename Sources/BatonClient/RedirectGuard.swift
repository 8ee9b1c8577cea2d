import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The per-task delegate of every request the session sends: a redirect to another origin
/// than the base URL's goes out without `Authorization`, `DPoP` and `X-Device-Id` (a presigned
/// download, a CDN, a hostile redirect must not receive a token, nor a proof, it could use); a
/// redirect within the origin of a bound (DPoP) request gets a fresh proof for its own method
/// and URL (the original's proof names the original URL: the server would refuse it, and it
/// must never be seen twice). Apps with URLSessions of their own apply the same rule with
/// `BatonSession.redirected(_:)` (issue 29, M8).
final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    private let origin: Origin?
    private let reprove: (@Sendable (URLRequest) -> String?)?

    /// A guard keeping credentials within `origin`; `reprove` makes a proof for a redirect of a
    /// bound request (nil when it cannot: the redirect then goes out without the token).
    init(origin: Origin?, reprove: (@Sendable (URLRequest) -> String?)? = nil) {
        self.origin = origin
        self.reprove = reprove
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(Self.redirected(request, within: origin, reprove: reprove))
    }

    /// `request` (a redirect's target) without the session's credentials unless it stays within
    /// `origin`; within it, a bound request's proof replaced by a fresh one from `reprove`.
    static func redirected(_ request: URLRequest, within origin: Origin?,
                           reprove: ((URLRequest) -> String?)? = nil) -> URLRequest {
        guard let origin, origin.contains(request.url) else { return withoutCredentials(request) }
        let bound = request.value(forHTTPHeaderField: "DPoP") != nil
            || request.value(forHTTPHeaderField: "Authorization")?.hasPrefix("DPoP ") == true
        guard bound else { return request }
        guard let proof = reprove?(request) else { return withoutCredentials(request) }
        var reproved = request
        reproved.setValue(proof, forHTTPHeaderField: "DPoP")
        return reproved
    }

    /// `request` without the token, its proof and the device id.
    static func withoutCredentials(_ request: URLRequest) -> URLRequest {
        var stripped = request
        for name in ["Authorization", "DPoP", "X-Device-Id"] { stripped.setValue(nil, forHTTPHeaderField: name) }
        return stripped
    }
}

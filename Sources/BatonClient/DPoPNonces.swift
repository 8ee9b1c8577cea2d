import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The latest `DPoP-Nonce` the server sent (RFC 9449 §8), for the next proofs. The server may
/// send one on any answer; the newest wins. Safe to use from any thread.
final class DPoPNonces: @unchecked Sendable {
    private let lock = NSLock()
    private var nonce: String?

    /// The nonce to put into the next proof, if the server gave one.
    var latest: String? {
        lock.lock()
        defer { lock.unlock() }
        return nonce
    }

    /// Keeps the answer's `DPoP-Nonce`, if it has one (a nonce is printable ASCII, RFC 9449 §8.1).
    func remember(_ response: HTTPURLResponse) {
        guard let value = response.value(forHTTPHeaderField: "DPoP-Nonce"), !value.isEmpty, value.count <= 512,
              value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else { return }
        lock.lock()
        defer { lock.unlock() }
        nonce = value
    }

    /// Whether the answer asks for a proof with a nonce: 401 with `WWW-Authenticate: DPoP …
    /// error="use_dpop_nonce"`, or 400 with the JSON error `use_dpop_nonce` (at login), with a
    /// `DPoP-Nonce` header to use.
    /// - Parameter badRequestCounts: whether a 400 counts (Baton's own endpoints: login's
    ///   challenge is a 400); never for the app's requests, whose 400s are the app's.
    static func isNonceChallenge(_ response: HTTPURLResponse, body: Data, badRequestCounts: Bool = true) -> Bool {
        // A 401 counts only with Baton's mark (F3): the app's own never makes a request resent.
        guard BatonRefusal.isBatons(response) || (badRequestCounts && response.statusCode == 400),
              response.value(forHTTPHeaderField: "DPoP-Nonce") != nil else { return false }
        return ServerError.from(body: body, response: response)?.code == "use_dpop_nonce"
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which 401s are Baton's (issue 42, F3). Baton marks every 401 it answers with
/// `X-Baton-Refused: true`, and so does every shipped gateway when it answers with verify's
/// refusal; the gateways remove the header from the application's answers. So a 401 without
/// it is the app's own (its OTP check, its own session), whatever its body says, and the
/// session never acts on it: no exchange, no replay, no logout, no proof resent; the app gets
/// it as `BatonClientError.http`. (Before, any 401 at the base URL whose body said
/// `session_expired` ended the Baton session and left its chain live on the server.)
enum BatonRefusal {
    static let header = "X-Baton-Refused"

    /// Whether `response` is a 401 that Baton (or a gateway on its behalf) answered.
    static func isBatons(_ response: HTTPURLResponse) -> Bool {
        guard response.statusCode == 401, let value = response.value(forHTTPHeaderField: header) else { return false }
        // One value, or the same repeated by a proxy that joined two copies ("true, true").
        let values = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return !values.isEmpty && values.allSatisfy { $0 == "true" }
    }
}

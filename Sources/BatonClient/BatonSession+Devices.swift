import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// "Your devices": the user's sessions, and signing one or all others out. Signing out is a
/// critical operation on the server (a recent password, RFC 9470): these go through step-up
/// like other critical requests, so `password` is asked at most once, only when the server
/// asks for it. The signed-out devices see `loginRequired(.revoked(.signedOut))`.
extension BatonSession {
    /// The user's live sessions, newest first; this app's own has `isCurrent`.
    /// - Throws: everything `send` throws; `.invalidResponse` for an answer without a session list.
    public func sessions() async throws -> [DeviceSession] {
        let (data, _) = try await send(URLRequest(url: configuration.baseURL.appendingPathComponent("v1/sessions")))
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let list = object["sessions"] as? [[String: Any]] else {
            throw BatonClientError.invalidResponse("a sessions answer without \"sessions\"")
        }
        return try list.map { json in
            guard let session = DeviceSession(json: json) else { throw BatonClientError.invalidResponse("a session without its members") }
            return session
        }
    }

    /// Signs out one of the user's sessions (another device, or this one: then it is a logout
    /// on the server, and the next request here says so).
    /// - Parameter password: asked (with the server's `max_age`) only when the last password
    ///   entry is too old; nil cancels (throws `stepUpRequired`).
    /// - Throws: `.http(404, not_found)` for a session that is not the user's or has ended;
    ///   everything `send(_:password:)` throws.
    public func signOut(sessionID: String, password: @escaping @Sendable (_ maxAge: Int?) async throws -> String?) async throws {
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/sessions").appendingPathComponent(sessionID))
        request.httpMethod = "DELETE"
        _ = try await send(request, password: password)
    }

    /// Signs out every other session of the user; this one stays.
    /// - Returns: how many sessions the server signed out.
    /// - Throws: as `signOut(sessionID:password:)`.
    @discardableResult
    public func signOutOtherSessions(password: @escaping @Sendable (_ maxAge: Int?) async throws -> String?) async throws -> Int {
        var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/sessions/revoke-others"))
        request.httpMethod = "POST"
        let (data, _) = try await send(request, password: password)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let revoked = object["revoked"] as? Int else {
            throw BatonClientError.invalidResponse("a sign-out answer without \"revoked\"")
        }
        return revoked
    }
}

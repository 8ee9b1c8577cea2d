import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an app's code calls on a session, as a protocol, so that the app's own tests can put
/// a stand-in of theirs where a `BatonSession` goes (a view model taking `any
/// BatonSessionProtocol`). `BatonSession` is the one implementation this library ships.
public protocol BatonSessionProtocol: Sendable {
    /// `BatonSession.events`.
    var events: AsyncStream<SessionEvent> { get }
    /// `BatonSession.status`.
    var status: SessionStatus { get async }
    /// `BatonSession.statusUpdates()`.
    func statusUpdates() async -> AsyncStream<SessionStatus>
    /// `BatonSession.restore(exchangeNow:)`.
    @discardableResult func restore(exchangeNow: Bool) async -> SessionStatus
    /// `BatonSession.login(username:password:deviceClass:deviceName:)`.
    func login(username: String, password: String, deviceClass: DeviceClass, deviceName: String?) async throws
    /// `BatonSession.logout()`.
    @discardableResult func logout() async -> Bool
    /// `BatonSession.send(_:)`.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
    /// `BatonSession.confirm(password:)`.
    func confirm(password: String) async throws -> Date
    /// `BatonSession.sessions()`.
    func sessions() async throws -> [DeviceSession]
    /// `BatonSession.refresh(within:)`.
    @discardableResult func refresh(within limit: Duration) async -> SessionStatus
    /// `BatonSession.resetIfFirstLaunch()`.
    @discardableResult func resetIfFirstLaunch() async -> Bool
}

extension BatonSessionProtocol {
    /// For a test double written before `refresh(within:)`: `restore(exchangeNow: true)`.
    @discardableResult public func refresh(within limit: Duration) async -> SessionStatus { await restore(exchangeNow: true) }
    /// For a test double written before the marker: nothing was an earlier installation's.
    @discardableResult public func resetIfFirstLaunch() async -> Bool { false }
}

extension BatonSession: BatonSessionProtocol {}

/// A gateway running the shipped files in front of Baton and the application (`NginxProcess`,
/// `CaddyProcess`, `TraefikProcess`, `HAProxyProcess`): a test that must hold for each asks
/// any of them the same way.
package protocol GatewayProcess: AnyObject, Sendable {
    /// One request through the gateway on a fresh connection, from the loopback address
    /// `source` when given.
    func request(_ method: String, _ path: String, from source: String?, token: String?, headers: [(String, String)], json: String?) throws -> HTTPConnection.Response
}

extension NginxProcess: GatewayProcess {}
extension CaddyProcess: GatewayProcess {}
extension TraefikProcess: GatewayProcess {}
extension HAProxyProcess: GatewayProcess {}

import Testing

/// Which shipped gateway a test runs, each running its files in deploy/ as shipped.
enum GatewayKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case nginx, caddy, traefik, haproxy
    var testDescription: String { rawValue }

    /// The gateways this machine has: nginx always; Caddy and HAProxy where Debian's packages
    /// are installed, Traefik where scripts/traefik-venv installed it (./scripts/test installs
    /// all three).
    static let available: [GatewayKind] = allCases.filter(\.isInstalled)

    var isInstalled: Bool {
        switch self {
        case .nginx: true
        case .caddy: caddyBinary != nil
        case .traefik: traefikBinary != nil
        case .haproxy: haproxyBinary != nil
        }
    }

    /// This gateway in front of Baton at `batonPort` and the application at `appPort`.
    func start(batonPort: UInt16, appPort: UInt16) throws -> any GatewayProcess {
        switch self {
        case .nginx: try NginxProcess(batonPort: batonPort, appPort: appPort)
        case .caddy: try CaddyProcess(batonPort: batonPort, appPort: appPort)
        case .traefik: try TraefikProcess(batonPort: batonPort, appPort: appPort)
        case .haproxy: try HAProxyProcess(batonPort: batonPort, appPort: appPort)
        }
    }
}

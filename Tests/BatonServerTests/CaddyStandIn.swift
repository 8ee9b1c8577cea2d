import Foundation

/// Copies of this machine's /etc/caddy and of the caddy user's home (/var/lib/caddy, owner
/// kept), and a /usr/share/doc holding the package's example (baton/examples/Caddyfile, as
/// scripts/package-deb installs it), for an `OperatorShell` to bind over the real ones.
/// Removed on deinit.
final class CaddyStandIn {
    let root: String
    /// Stands in for /etc/caddy.
    let caddy: String
    /// Stands in for /var/lib/caddy (what `caddy validate` writes as the caddy user).
    let home: String
    /// Stands in for /usr/share/doc.
    let doc: String

    init() throws {
        root = try temporaryDirectory("baton-caddy-conf-")
        caddy = root + "/caddy"
        home = root + "/home"
        doc = root + "/doc"
        try runProcess("/bin/cp", ["-a", "/etc/caddy", caddy])
        try runProcess("/bin/cp", ["-a", "/var/lib/caddy", home])
        try FileManager.default.createDirectory(atPath: doc + "/baton/examples", withIntermediateDirectories: true)
        try runProcess("/usr/bin/install", ["-m", "0644", repositoryRoot + "/deploy/caddy/Caddyfile", doc + "/baton/examples/Caddyfile"])
    }

    /// A shell in which these copies are /etc/caddy, /var/lib/caddy and /usr/share/doc.
    func shell() -> OperatorShell {
        var shell = OperatorShell()
        shell.binds = [(caddy, "/etc/caddy"), (home, "/var/lib/caddy"), (doc, "/usr/share/doc")]
        return shell
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

import Foundation

/// Copies of this machine's /etc/nginx and /etc/ssl with the package's nginx files installed
/// (deploy/nginx/ mirrors /etc/nginx/, as scripts/package-deb installs it) and a throwaway
/// certificate at the site's placeholder paths, for an `OperatorShell` to bind over the real
/// ones. Removed on deinit.
final class NginxStandIn {
    let root: String
    /// Stands in for /etc/nginx.
    let nginx: String
    /// Stands in for /etc/ssl.
    let ssl: String

    init(commonName: String) throws {
        root = try temporaryDirectory("baton-nginx-conf-")
        nginx = root + "/nginx"
        ssl = root + "/ssl"
        try runProcess("/bin/cp", ["-a", "/etc/nginx", nginx])
        try runProcess("/bin/cp", ["-a", "/etc/ssl", ssl])
        try runProcess("/bin/cp", ["-r", repositoryRoot + "/deploy/nginx/.", nginx + "/"])
        try FileManager.default.createDirectory(atPath: ssl + "/baton", withIntermediateDirectories: true)
        try runProcess("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=\(commonName)",
                                            "-keyout", ssl + "/baton/privkey.pem", "-out", ssl + "/baton/fullchain.pem"])
    }

    /// A shell in which these copies are /etc/nginx and /etc/ssl.
    func shell() -> OperatorShell {
        var shell = OperatorShell()
        shell.binds = [(nginx, "/etc/nginx"), (ssl, "/etc/ssl")]
        return shell
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

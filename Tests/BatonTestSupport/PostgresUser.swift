import Foundation
import Glibc

/// The unprivileged OS user test PostgreSQL servers run as. PostgreSQL refuses to run as root,
/// and CI runs as root: then the servers run as the system user `baton-pgtest` (created at first
/// use with `useradd --system`), their commands prefixed with `setpriv` to drop privileges.
/// Run as any other user, the servers simply run as that user.
package struct PostgresUser: Sendable {
    package static let name = "baton-pgtest"

    package let uid: uid_t
    package let gid: gid_t
    /// Whether commands must drop privileges (the caller is root).
    package let dropsPrivileges: Bool

    /// The user to run servers as; creates `baton-pgtest` when running as root and it is missing.
    /// Decided once per process: parallel tests must not race each other's `useradd`.
    package static func current() throws(PostgresClusterError) -> PostgresUser { try resolved.get() }

    private static let resolved: Result<PostgresUser, PostgresClusterError> = {
        guard geteuid() == 0 else { return .success(PostgresUser(uid: geteuid(), gid: getegid(), dropsPrivileges: false)) }
        var failure = "not found"
        // Another process (a parallel test run) may be creating it: useradd then fails to lock
        // /etc/passwd, and the user appears a moment later. Look again until a deadline.
        let deadline = Date().addingTimeInterval(30)
        repeat {
            if let user = lookUp() { return .success(user) }
            let created = try? runCommand("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                                                                "--shell", "/usr/sbin/nologin", "--comment", "Baton test PostgreSQL servers", name])
            if let user = lookUp() { return .success(user) }
            failure = created?.stderr ?? "cannot run /usr/sbin/useradd"
            usleep(200_000)  // between attempts, with a deadline
        } while Date() < deadline
        return .failure(.userUnavailable("useradd \(name) failed: \(failure)"))
    }()

    private static func lookUp() -> PostgresUser? {
        guard let entry = getpwnam(name) else { return nil }
        return PostgresUser(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid, dropsPrivileges: true)
    }

    /// The executable and arguments that run `program` as this user.
    package func command(_ program: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        guard dropsPrivileges else { return (program, arguments) }
        return ("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", program] + arguments)
    }

    /// Makes `directory` this user's, and every ancestor searchable (x only) by it: a test's
    /// TMPDIR from `mktemp -d` is 0700 root, which the server could not traverse. Nothing is
    /// made readable or writable that was not.
    package func adopt(_ directory: String) throws(PostgresClusterError) {
        guard dropsPrivileges else { return }
        guard chown(directory, uid, gid) == 0 else { throw .userUnavailable("cannot chown \(directory): errno \(errno)") }
        var ancestor = (directory as NSString).deletingLastPathComponent
        while ancestor != "/" && !ancestor.isEmpty {
            var info = stat()
            if stat(ancestor, &info) == 0 && info.st_mode & S_IXOTH == 0 {
                guard chmod(ancestor, info.st_mode & 0o7777 | S_IXOTH) == 0 else { throw .userUnavailable("cannot chmod o+x \(ancestor): errno \(errno)") }
            }
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
    }
}

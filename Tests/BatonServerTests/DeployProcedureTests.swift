import Foundation
import Glibc
import Testing

/// The procedures of docs/deploy.md, run as written (each block taken from the document at
/// test time) against a live server, with test directories standing in for /var/lib,
/// /var/backups, /etc/nginx, /etc/ssl and /etc/caddy in a private mount namespace.
@Suite(.enabled(if: OperatorShell.isAvailable, "needs unshare --mount (root) and script(1)"))
struct DeployProcedureTests {
    static let password = "correct horse battery"

    @Test func firstUserIsCreatedAsTheServiceUser() throws {
        let host = try StandInHost()
        defer { host.remove() }
        var shell = host.shell()
        shell.answers = [("Password: ", Self.password), ("Confirm password: ", Self.password)]
        let outcome = try shell.run(DocumentedBlock.named("first-user"))
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.systemctlCalls == ["enable --now baton"])
        try expectServiceIdentity(outcome.systemdRuns, count: 1)
        #expect(outcome.transcript.contains("Created user 'alice' (id 1)."), "\(outcome.transcript)")
        let server = try #require(host.service.current)
        #expect(try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"\#(Self.password)","device_id":"d"}"#).status == 200)
    }

    @Test func backupThenRestoreRefusesATokenConsumedAfterTheBackup() throws {
        let host = try StandInHost()
        defer { host.remove() }
        let server = try host.service.start()
        try server.addUser("alice")
        let t0 = try server.login()["token"] as! String
        let t1 = try exchange(t0, on: server)

        var shell = host.shell()
        let backup = try shell.run(DocumentedBlock.named("backup"))
        #expect(backup.status == 0, "\(backup.transcript)")
        let directory = host.backups + "/baton"
        #expect(try mode(of: directory) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files.count == 2 && files[0].hasPrefix("baton-") && files[0].hasSuffix(".db") && files[1] == "baton.db.key", "\(files)")
        for file in files { #expect(try mode(of: directory + "/" + file) == 0o600, "\(file)") }

        let t2 = try exchange(t1, on: server)  // t1 is consumed after the backup
        // The danger the restore procedure answers: the backup alone takes t1 again.
        let unrevoked = try ServerProcess(directory: try copyOfBackup(host, files))
        #expect(try unrevoked.request("POST", "/v1/exchange", token: t1).status == 200)

        shell.systemctl = host.service.handle
        let restore = try shell.run(DocumentedBlock.named("restore"))
        #expect(restore.status == 0, "\(restore.transcript)")
        #expect(restore.systemctlCalls == ["stop baton", "start baton"])
        try expectServiceIdentity(restore.systemdRuns, count: 1)
        let restored = try #require(host.service.current)
        let reused = try restored.request("POST", "/v1/exchange", token: t1)
        #expect(reused.status == 401 && reused.error == "chain_revoked" && reused.json["reason"] as? String == "admin", "\(reused.text)")
        #expect(try restored.request("GET", "/v1/verify", token: t2).status == 401)
        #expect(try restored.request("GET", "/v1/verify", token: try restored.login()["token"] as? String).status == 200)
        let notes = try revocationNotes(restored)
        #expect(notes.count == 1 && notes[0].hasPrefix("restored /var/backups/baton/baton-"), "\(notes)")
    }

    @Test func theftResponseRevokesTheStolenSessionOnly() throws {
        let host = try StandInHost()
        defer { host.remove() }
        let server = try host.service.start()
        try server.addUser("alice")
        try server.addUser("bob")
        let login = try server.login("alice")
        let thiefToken = try exchange(login["token"] as! String, on: server)  // the thief exchanged the stolen token
        let bobToken = try server.login("bob")["token"] as! String

        let outcome = try host.shell().run(DocumentedBlock.named("theft"))
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.transcript.contains(login["chain_id"] as! String), "the chains listing shows the session")
        try expectServiceIdentity(outcome.systemdRuns, count: 1)
        let answer = try server.request("GET", "/v1/verify", token: thiefToken)
        #expect(answer.error == "chain_revoked" && answer.json["reason"] as? String == "admin")
        #expect(try server.request("POST", "/v1/exchange", token: thiefToken).error == "chain_revoked")
        #expect(try server.request("GET", "/v1/verify", token: bobToken).status == 200)
        #expect(try revocationNotes(server) == ["phone reported stolen"])
    }

    @Test func revokeAllAsksAndEndsEverySession() throws {
        let host = try StandInHost()
        defer { host.remove() }
        let server = try host.service.start()
        try server.addUser("alice")
        try server.addUser("bob")
        let tokens = try ["alice", "bob"].map { try server.login($0)["token"] as! String }
        var shell = host.shell()
        shell.answers = [("Type 'yes' to confirm: ", "yes")]
        let outcome = try shell.run(DocumentedBlock.named("revoke-all"))
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.transcript.contains("Revoke all 2 chains?") && outcome.transcript.contains("Revoked 2 chains"), "\(outcome.transcript)")
        try expectServiceIdentity(outcome.systemdRuns, count: 1)
        for token in tokens { #expect(try server.request("GET", "/v1/verify", token: token).error == "chain_revoked") }
    }

    @Test(.enabled(if: nginxBinary != nil && FileManager.default.fileExists(atPath: "/etc/nginx/nginx.conf"), "needs Debian's nginx"))
    func nginxSetupPassesNginxTestInDebiansLayout() throws {
        // What the package installs, in copies of /etc/nginx and /etc/ssl.
        let standIn = try NginxStandIn(commonName: "auth.example.org")
        let nginx = standIn.nginx
        var shell = standIn.shell()
        shell.systemctl = { $0 == "reload nginx" ? nil : "unexpected: systemctl \($0)" }
        let outcome = try shell.run(DocumentedBlock.named("nginx-site"))
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.transcript.contains("configuration file /etc/nginx/nginx.conf test is successful"), "\(outcome.transcript)")
        #expect(outcome.systemctlCalls == ["reload nginx"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: nginx + "/sites-enabled/baton") == "../sites-available/baton")
        #expect(try String(contentsOfFile: nginx + "/sites-available/baton", encoding: .utf8).contains("server_name auth.example.org;"))

        // The layout the docs had before (everything in conf.d/) fails the same check.
        try runProcess("/bin/cp", [repositoryRoot + "/deploy/nginx/snippets/baton-proxy.conf", nginx + "/conf.d/"])
        let old = try shell.run("nginx -t\n")
        #expect(old.status != 0 && old.transcript.contains("\"if\" directive is not allowed here"), "\(old.transcript)")
    }

    @Test(.enabled(if: caddyBinary != nil && FileManager.default.fileExists(atPath: "/etc/caddy/Caddyfile"), "needs Debian's caddy"))
    func caddySetupPassesCaddyValidateInDebiansLayout() throws {
        let standIn = try CaddyStandIn()
        var shell = standIn.shell()
        shell.systemctl = { $0 == "reload caddy" ? nil : "unexpected: systemctl \($0)" }
        let outcome = try shell.run(DocumentedBlock.named("caddy-site"))
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.transcript.contains("Valid configuration"), "\(outcome.transcript)")
        #expect(outcome.systemctlCalls == ["reload caddy"])
        let installed = try String(contentsOfFile: standIn.caddy + "/Caddyfile", encoding: .utf8)
        #expect(installed.contains("\nauth.example.org {") && !installed.contains("auth.example.com"))
    }

    // MARK: - Helpers

    /// Exchanges `token` on `server`; the successor, or a thrown failure.
    func exchange(_ token: String, on server: ServerProcess) throws -> String {
        let response = try server.request("POST", "/v1/exchange", token: token)
        guard response.status == 200, let next = response.json["token"] as? String else {
            throw OperatorShell.Failure(description: "exchange failed: \(response.status) \(response.text)")
        }
        return next
    }

    /// A state directory holding the backup's database and key, as a restore without the revoke would leave it.
    func copyOfBackup(_ host: StandInHost, _ files: [String]) throws -> String {
        let directory = try temporaryDirectory("baton-unrevoked-")
        // Handed to a ServerProcess, which removes it; removed here if the copy fails.
        var copied = false
        defer { if !copied { try? FileManager.default.removeItem(atPath: directory) } }
        try FileManager.default.copyItem(atPath: host.backups + "/baton/" + files[0], toPath: directory + "/baton.db")
        try FileManager.default.copyItem(atPath: host.backups + "/baton/baton.db.key", toPath: directory + "/baton.db.key")
        copied = true
        return directory
    }

    /// The `detail.note` of every `chain_revoked` event that has one.
    func revocationNotes(_ server: ServerProcess) throws -> [String] {
        try runBaton(["admin", "audit", "--kind", "chain_revoked", "--format", "json", "--db", server.databasePath]).1
            .split(separator: "\n").compactMap { line in
                let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return (event?["detail"] as? [String: Any])?["note"] as? String
            }
    }

    /// Each `systemd-run` gave every identity setting of the shipped unit its value.
    func expectServiceIdentity(_ runs: [[String]], count: Int) throws {
        #expect(runs.count == count)
        let unit = try shippedUnitSettings()
        for run in runs {
            var given: [String: String] = [:]
            for property in run {
                guard let equals = property.firstIndex(of: "=") else { continue }
                given[String(property[..<equals])] = String(property[property.index(after: equals)...])
            }
            for name in serviceIdentitySettings {
                #expect(unit[name] != nil && given[name] == unit[name], "systemd-run -p \(name)=\(given[name] ?? "(missing)"); the unit has \(unit[name] ?? "nothing")")
            }
            try expectValidTransientUnit(run)
        }
    }

    /// systemd accepts the properties: the unit systemd-run would make of them passes `systemd-analyze verify`.
    func expectValidTransientUnit(_ properties: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let directory = try temporaryDirectory("baton-run-unit-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let unit = "[Service]\nType=oneshot\n" + properties.map { $0 + "\n" }.joined() + "ExecStart=\(batonBinary) --help\n"
        try unit.write(toFile: directory + "/run-baton-admin.service", atomically: true, encoding: .utf8)
        let (status, out, err) = try runProcess("/usr/bin/systemd-analyze", ["verify", directory + "/run-baton-admin.service"], check: false)
        #expect(status == 0 && !(out + err).contains("run-baton-admin.service:"), "\(out)\(err)")
    }

    /// The permission bits of `path`.
    func mode(of path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }
}

/// The directories that stand in for the host's /var/lib and /var/backups, and the service.
/// Each test removes it with `defer { host.remove() }` (backups and keys included), pass or
/// fail: a deinit could run at the host's last use, before the shell is done with its files.
struct StandInHost {
    let root: String
    let varLib: String
    let backups: String
    let service: ServiceStandIn

    init() throws {
        root = try temporaryDirectory("baton-host-")
        varLib = root + "/var-lib"
        backups = root + "/var-backups"
        for directory in [varLib, backups] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        service = ServiceStandIn(stateDirectory: varLib + "/baton")
    }

    /// Stops the servers and removes the directories.
    func remove() {
        service.stopAll()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A shell whose /var/lib and /var/backups are the stand-ins, and whose systemctl drives the service.
    func shell() -> OperatorShell {
        var shell = OperatorShell()
        shell.binds = [(varLib, "/var/lib"), (backups, "/var/backups")]
        shell.systemctl = service.handle
        return shell
    }
}

/// baton.service as systemctl would run it: `baton serve` on the state directory (the
/// database `/var/lib/baton/baton.db` inside the shell's namespace), on a free loopback port.
final class ServiceStandIn: @unchecked Sendable {
    let stateDirectory: String
    /// Every server started; kept until the test ends (each removes the directory when released).
    private var servers: [ServerProcess] = []

    init(stateDirectory: String) { self.stateDirectory = stateDirectory }

    /// The running server, if any.
    var current: ServerProcess? { servers.last.flatMap { $0.process.isRunning ? $0 : nil } }

    /// Starts `baton serve` on the state directory.
    @discardableResult
    func start() throws -> ServerProcess {
        let server = try ServerProcess(directory: stateDirectory)
        servers.append(server)
        return server
    }

    /// Stops every server started (their own deinits would, later than the host's files go).
    func stopAll() {
        for server in servers { server.stop(SIGKILL) }
    }

    /// `systemctl <call>`: nil on success, else what went wrong.
    func handle(_ call: String) -> String? {
        switch call {
        case "enable --now baton", "start baton":
            if current != nil { return nil }
            do { try start() } catch { return "baton did not start: \(error)" }
            return nil
        case "stop baton":
            guard let server = current else { return nil }
            let status = server.stop()
            return status == 0 ? nil : "baton exited with status \(status)"
        default:
            return "unexpected: systemctl \(call)"
        }
    }
}

/// A new directory under the test run's TMPDIR.
func temporaryDirectory(_ prefix: String) throws -> String {
    let directory = NSTemporaryDirectory() + prefix + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
}

/// Runs a program; returns its status, stdout and stderr. With `check`, a non-zero status throws.
@discardableResult
func runProcess(_ path: String, _ arguments: [String], check: Bool = true) throws -> (status: Int32, out: String, err: String) {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe(), error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let out = output.fileHandleForReading.readDataToEndOfFile(), err = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let result = (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    if check, result.0 != 0 {
        throw OperatorShell.Failure(description: "\(path) \(arguments.joined(separator: " ")): status \(result.0)\n\(result.2)")
    }
    return result
}

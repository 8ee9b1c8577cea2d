import Foundation
import Glibc
import Testing

/// The .deb that scripts/package-deb built (scripts/test builds it and sets TEST_DEB_PACKAGE).
let packagePath = ProcessInfo.processInfo.environment["TEST_DEB_PACKAGE"]

/// The Debian package: what it installs where, and a binary that runs without the Swift toolchain.
@Suite(.enabled(if: packagePath != nil, "scripts/test builds the .deb and sets TEST_DEB_PACKAGE"))
struct PackageTests {
    /// The package's files, extracted with dpkg-deb into `root`, and its control files in `control`.
    struct Extracted {
        let root: String
        let control: String

        init() throws {
            let directory = try temporaryDirectory("baton-deb-")
            root = directory + "/root"
            control = directory + "/control"
            try runProcess("/usr/bin/dpkg-deb", ["-x", packagePath!, root])
            try runProcess("/usr/bin/dpkg-deb", ["-e", packagePath!, control])
        }

        /// Deletes the extracted files.
        func remove() { try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent) }

    }

    @Test func installsTheBinaryUnitSettingsNginxFilesCaddyExampleAndDocs() throws {
        let package = try Extracted()
        defer { package.remove() }
        let files = try runProcess("/usr/bin/find", [package.root, "-type", "f", "-printf", "/%P\n"]).out.split(separator: "\n").map(String.init).sorted()
        #expect(files == ([
            "/etc/default/baton", "/etc/nginx/conf.d/baton-zones.conf", "/etc/nginx/sites-available/baton",
            "/etc/nginx/snippets/baton-proxy-headers.conf", "/etc/nginx/snippets/baton-proxy.conf",
            "/lib/systemd/system/baton.service", "/usr/bin/baton",
            "/usr/share/doc/baton/CHANGELOG.md", "/usr/share/doc/baton/README.md",
            "/usr/share/doc/baton/changelog.gz", "/usr/share/doc/baton/copyright", "/usr/share/doc/baton/examples/Caddyfile",
            "/usr/share/doc/baton/examples/baton-dashboard.json", "/usr/share/doc/baton/examples/baton-rules.yml",
            "/usr/share/doc/baton/openapi.yaml", "/usr/share/lintian/overrides/baton",
        ] + Self.gatewayExamples.map(\.installed) + (try Self.documents()).map { "/usr/share/doc/baton/" + $0 }).sorted())
        // A packaged document's link to another document resolves in the package (a fresh-clone
        // walk-through found deploy.md's links to dpop.md and security.md dangling there).
        for document in files.filter({ $0.hasPrefix("/usr/share/doc/baton/") && $0.hasSuffix(".md") }) {
            let text = try String(contentsOfFile: package.root + document, encoding: .utf8)
            for link in Self.documentLinks(in: text) {
                #expect(files.contains("/usr/share/doc/baton/" + link), "\(document) links to \(link), which the package lacks")
            }
        }
        // The shipped files are the repository's, byte for byte.
        let nginxFiles = files.filter { $0.hasPrefix("/etc/nginx/") }.map { ($0, "deploy/nginx/" + $0.dropFirst("/etc/nginx/".count)) }
        let sources = [("/lib/systemd/system/baton.service", "deploy/systemd/baton.service"), ("/etc/default/baton", "deploy/default/baton"),
                       ("/usr/share/doc/baton/deploy.md", "docs/deploy.md"),
                       ("/usr/share/doc/baton/examples/Caddyfile", "deploy/caddy/Caddyfile"),
                       ("/usr/share/doc/baton/examples/baton-rules.yml", "deploy/prometheus/baton-rules.yml"),
                       ("/usr/share/doc/baton/examples/baton-dashboard.json", "deploy/grafana/baton-dashboard.json")] + nginxFiles
            + Self.gatewayExamples.map { ($0.installed, $0.source) }
        for (installed, source) in sources {
            #expect(FileManager.default.contentsEqual(atPath: package.root + installed, andPath: repositoryRoot + "/" + source), "\(installed)")
        }
        // Everything under /etc is a conffile: dpkg keeps the operator's edits.
        let conffiles = try String(contentsOfFile: package.control + "/conffiles", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(conffiles == files.filter { $0.hasPrefix("/etc/") })
        // What the unit names is in the package.
        let unit = try shippedUnitSettings()
        for path in [unit["Documentation"].map { String($0.dropFirst("file://".count)) }, unit["EnvironmentFile"],
                     unit["ExecStart"].map { String($0.prefix { $0 != " " }) }] {
            let path = try #require(path)
            #expect(files.contains(path), "\(path)")
        }
    }

    /// The repository's documents (docs/*.md): the package ships each.
    static func documents() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/docs").filter { $0.hasSuffix(".md") }
    }

    /// The targets of a Markdown text's links to documents beside it (`[x](dpop.md#anchor)`,
    /// `(openapi.yaml)`): no directory, no scheme.
    static func documentLinks(in text: String) -> Set<String> {
        var links: Set<String> = []
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            rest = rest[open.upperBound...]
            let target = rest.prefix { $0 != ")" && $0 != "#" && $0 != " " }
            if !target.contains("/"), target.hasSuffix(".md") || target.hasSuffix(".yaml") { links.insert(String(target)) }
        }
        return links
    }

    @Test func versionIsTheBinarysAndTheChangelogsNewest() throws {
        let package = try Extracted()
        defer { package.remove() }
        let control = try String(contentsOfFile: package.control + "/control", encoding: .utf8)
        let version = try #require(control.split(separator: "\n").first { $0.hasPrefix("Version: ") }).dropFirst("Version: ".count)
        #expect(try runBaton(["--version"]).1.hasPrefix("baton \(version) (commit "))
        let changelog = try String(contentsOfFile: repositoryRoot + "/CHANGELOG.md", encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## [") }
        #expect(newest?.hasPrefix("## [\(version)]") == true, "\(newest ?? "no release heading")")
        #expect(packagePath!.hasSuffix("/baton_\(version)_\(try runProcess("/usr/bin/dpkg", ["--print-architecture"]).out.trimmingCharacters(in: .newlines)).deb"))
    }

    @Test func dependsOnDebiansRuntimeLibrariesWithVersions() throws {
        let package = try Extracted()
        defer { package.remove() }
        let control = try String(contentsOfFile: package.control + "/control", encoding: .utf8)
        let depends = try #require(control.split(separator: "\n").first { $0.hasPrefix("Depends: ") }).dropFirst("Depends: ".count)
        let names = depends.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for library in ["libsqlite3-0", "libssl3", "libargon2-1", "libpq5", "libcurl4", "libc6"] {
            #expect(names.contains { $0.hasPrefix(library + " (>= ") }, "\(depends)")
        }
        #expect(!depends.contains("swift"), "\(depends)")
    }

    /// With the toolchain's library directory hidden (an empty tmpfs over it, in a private
    /// mount namespace), the packaged binary runs; the debug build, which uses the toolchain's
    /// libraries, does not (so the hiding works).
    @Test(.enabled(if: OperatorShell.isAvailable, "needs unshare --mount (root)"))
    func binaryRunsWithoutTheSwiftToolchain() throws {
        let package = try Extracted()
        defer { package.remove() }
        let baton = package.root + "/usr/bin/baton"
        let dynamic = try readelfDynamic(baton)
        #expect(!dynamic.contains("RUNPATH") && !dynamic.contains("RPATH"), "\(dynamic)")
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.allSatisfy { line in ["libcrypto.so.3", "libargon2.so.1", "libsqlite3.so.0", "libpq.so.5", "libcurl.so.4", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux"].contains { line.contains($0) } }, "\(needed)")

        // Where the debug build finds libswiftCore: the directory to hide.
        let debugLibraries = try runProcess("/usr/bin/ldd", [batonBinary]).out
        let core = try #require(debugLibraries.split(separator: "\n").first { $0.contains("libswiftCore.so") })
        let toolchainLibraries = try #require(core.split(separator: " ").first { $0.hasPrefix("/") }.map { ($0 as NSString).deletingLastPathComponent })

        let database = try temporaryDirectory("baton-static-") + "/baton.db"
        defer { try? FileManager.default.removeItem(atPath: (database as NSString).deletingLastPathComponent) }
        let script = """
            mount -t tmpfs none \(toolchainLibraries)
            ! \(batonBinary) --help >/dev/null 2>&1 || { echo "the debug build still found the toolchain"; exit 1; }
            ldd \(baton)
            \(baton) --help | head -n 1
            echo 'correct horse battery' | \(baton) admin user add alice --password-stdin --db \(database)
            \(baton) admin user list --db \(database) | tail -n 1 | cut -c1-5
            """
        let (status, out, err) = try runProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "--", "/bin/bash", "-e", "-c", script], check: false)
        #expect(status == 0, "\(out)\(err)")
        #expect(!out.contains(toolchainLibraries) && !out.contains("not found"), "\(out)")
        #expect(out.contains("\nOVERVIEW: ") && out.hasSuffix("\nCreated user 'alice' (id 1).\nalice\n"), "\(out)")
    }

    /// Every other gateway's files, as examples (issue 43: an operator who copied only the
    /// package lacked the Traefik and HAProxy files).
    static let gatewayExamples: [(installed: String, source: String)] = [
        ("/usr/share/doc/baton/examples/traefik/traefik.yml", "deploy/traefik/traefik.yml"),
        ("/usr/share/doc/baton/examples/traefik/dynamic/baton.yml", "deploy/traefik/dynamic/baton.yml"),
        ("/usr/share/doc/baton/examples/traefik/dynamic/tls.yml", "deploy/traefik/dynamic/tls.yml"),
        ("/usr/share/doc/baton/examples/haproxy/haproxy.cfg", "deploy/haproxy/haproxy.cfg"),
        ("/usr/share/doc/baton/examples/haproxy/baton-verify.lua", "deploy/haproxy/baton-verify.lua"),
        ("/usr/share/doc/baton/examples/envoy/envoy.yaml", "deploy/envoy/envoy.yaml"),
        ("/usr/share/doc/baton/examples/envoy/istio-authorization-policy.yaml", "deploy/envoy/istio-authorization-policy.yaml"),
    ]

    /// A documented drop-in that hands the packaged service a secret as a systemd credential.
    enum DropIn: String, CaseIterable, Sendable {
        /// docs/webhooks.md, "The packaged service" (issue 32 (3)).
        case webhooks
        /// docs/deploy.md, "OAuth introspection" (issue 43, finding 5: the documented `chown
        /// baton:` could not work for the dynamic user).
        case introspection

        /// The documented block.
        func block() throws -> String {
            switch self {
            case .webhooks: try DocumentedBlock.named("webhook-drop-in", in: "docs/webhooks.md")
            case .introspection: try DocumentedBlock.named("introspection-client", in: "docs/deploy.md")
            }
        }
        /// The block's command that makes the secret in /etc/baton, and the same for the test.
        var secretCommand: (documented: String, run: String) {
            switch self {
            case .webhooks: ("(umask 077 && baton admin webhooks new-secret > /etc/baton/hooks.secret)", #"umask 077 && "$0" admin webhooks new-secret > "$1""#)
            case .introspection: ("(umask 077 && openssl rand -hex 32 > /etc/baton/kong.secret)", #"umask 077 && openssl rand -hex 32 > "$1""#)
            }
        }
        var secretName: String { self == .webhooks ? "hooks.secret" : "kong.secret" }
    }

    /// The packaged service configured through each documented drop-in. The unit's command line
    /// from the package, with the environment systemd would give it: the package's settings
    /// file, then the drop-in's `Environment=` lines, `%d` being a credentials directory (0500)
    /// holding the secret as `LoadCredential=` does (0400). Stand-ins: the database in a test
    /// directory instead of /var/lib/baton, a free port, and for webhooks the receiver's URL for
    /// the documented one. Then what the drop-in is for works: a webhook delivered and verified,
    /// or an introspection by the client with the secret in /etc/baton.
    @Test(.timeLimit(.minutes(2)), arguments: DropIn.allCases)
    func theUnitRunsWithTheDocumentedDropIn(_ dropInKind: DropIn) throws {
        let package = try Extracted()
        defer { package.remove() }
        let directory = try temporaryDirectory("baton-drop-in-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func settings(_ text: String) -> [(String, String)] {
            text.split(separator: "\n").compactMap { line in
                guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { return nil }
                return (String(line[..<equals]), String(line[line.index(after: equals)...]))
            }
        }
        let unit = settings(try String(contentsOfFile: package.root + "/lib/systemd/system/baton.service", encoding: .utf8))
        let execStart = try #require(unit.first { $0.0 == "ExecStart" }?.1).split(separator: " ").map(String.init)
        let environmentFile = try #require(unit.first { $0.0 == "EnvironmentFile" }?.1)
        var environment = ChildEnvironment.make()
        for (name, value) in settings(try String(contentsOfFile: package.root + environmentFile, encoding: .utf8)) { environment[name] = value }

        // The drop-in: the here-document of the documented block.
        let block = try dropInKind.block().split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(block.firstIndex { $0.hasSuffix("<<'UNIT'") }), end = try #require(block.lastIndex(of: "UNIT"))
        let dropIn = settings(block[(start + 1)..<end].joined(separator: "\n"))
        #expect(block[start].hasPrefix("cat > /etc/systemd/system/baton.service.d/") && block.contains("systemctl daemon-reload"))
        // systemd takes the packaged unit with the drop-in: no unknown key, no bad value.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") {
            let units = directory + "/units"
            try FileManager.default.createDirectory(atPath: units + "/baton.service.d", withIntermediateDirectories: true)
            let unitText = try String(contentsOfFile: package.root + "/lib/systemd/system/baton.service", encoding: .utf8)
                .replacing("/usr/bin/baton", with: package.root + "/usr/bin/baton")
                .replacing("EnvironmentFile=/etc/default/baton", with: "EnvironmentFile=" + package.root + "/etc/default/baton")
            try unitText.write(toFile: units + "/baton.service", atomically: true, encoding: .utf8)
            try (block[(start + 1)..<end].joined(separator: "\n") + "\n").write(toFile: units + "/baton.service.d/\(dropInKind.rawValue).conf", atomically: true, encoding: .utf8)
            let (status, out, err) = try runProcess("/usr/bin/env", ["SYSTEMD_UNIT_PATH=\(units):", "/usr/bin/systemd-analyze", "verify", units + "/baton.service"], check: false)
            #expect(status == 0 && !(out + err).contains("baton.service") && !(out + err).contains("\(dropInKind.rawValue).conf"), "\(out)\(err)")
        }

        // The secret as the block makes it (umask 077), then loaded as systemd loads a credential.
        let credentials = directory + "/credentials", etcBaton = directory + "/etc-baton", state = directory + "/state"
        for path in [credentials, etcBaton, state] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        let baton = package.root + "/usr/bin/baton"
        let secretPath = etcBaton + "/" + dropInKind.secretName
        #expect(block.contains(Substring(dropInKind.secretCommand.documented)))
        try runProcess("/bin/sh", ["-c", dropInKind.secretCommand.run, baton, secretPath])
        #expect(try FileManager.default.attributesOfItem(atPath: secretPath)[.posixPermissions] as? Int == 0o600)
        // The package makes /etc/baton root's alone.
        #expect(try FileManager.default.attributesOfItem(atPath: package.root + "/etc/baton")[.posixPermissions] as? Int == 0o700)
        for (name, value) in dropIn where name == "LoadCredential" {
            let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
            #expect(parts.count == 2 && parts[1].hasPrefix("/etc/baton/"), "\(value)")
            let source = etcBaton + "/" + parts[1].dropFirst("/etc/baton/".count), copy = credentials + "/" + parts[0]
            try FileManager.default.copyItem(atPath: source, toPath: copy)
            #expect(chmod(copy, 0o400) == 0)
        }
        #expect(chmod(credentials, 0o500) == 0)
        defer { chmod(credentials, 0o700) }
        for (name, value) in dropIn where name == "Environment" {
            var assignment = value
            if assignment.hasPrefix("\""), assignment.hasSuffix("\"") { assignment = String(assignment.dropFirst().dropLast()) }
            let equals = try #require(assignment.firstIndex(of: "="))
            environment[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...]).replacing("%d", with: credentials)
        }
        var receiver: WebhookReceiver?
        defer { receiver?.stop() }
        switch dropInKind {
        case .webhooks:
            #expect(environment["BATON_WEBHOOK_SECRET_FILE"] == credentials + "/hooks.secret")
            #expect(environment["BATON_WEBHOOK"]?.contains(" ") == false)  // one endpoint: the receiver stands in for it
            receiver = try WebhookReceiver(secretFile: secretPath, logPath: directory + "/received.log")
            environment["BATON_WEBHOOK"] = receiver?.url
        case .introspection:
            #expect(environment["BATON_INTROSPECTION_CLIENT"] == "kong:" + credentials + "/kong.secret")
        }
        environment["BATON_DB"] = state + "/baton.db"
        environment["BATON_LISTEN"] = "127.0.0.1:0"

        let server = ChildProcess()
        server.executableURL = URL(fileURLWithPath: package.root + execStart[0])
        server.arguments = Array(execStart.dropFirst())
        server.environment = environment
        server.currentDirectoryURL = URL(fileURLWithPath: state)
        let stdoutPath = directory + "/stdout.log", stderrPath = directory + "/stderr.log"
        for path in [stdoutPath, stderrPath] { #expect(FileManager.default.createFile(atPath: path, contents: nil)) }
        server.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        server.standardError = FileHandle(forWritingAtPath: stderrPath)
        server.standardInput = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.send(SIGKILL); server.waitUntilExit() } }
        var port: UInt16?
        let deadline = Date().addingTimeInterval(30)
        while port == nil, Date() < deadline, server.isRunning {
            let line = ((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "").split(separator: "\n").first ?? ""
            if let range = line.range(of: "127.0.0.1:") { port = UInt16(line[range.upperBound...].prefix { $0.isNumber }) }
            usleep(5_000)  // polling a file for a condition, with a deadline
        }
        let errors = { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
        let listening = try #require(port, "\(errors())")

        let added = try runProcess("/bin/sh", ["-c", #"printf 'correct horse battery\n' | "$0" admin user add alice --password-stdin --db "$1""#, baton, state + "/baton.db"])
        #expect(added.out == "Created user 'alice' (id 1).\n")
        let connection = try HTTPConnection(port: listening)
        defer { connection.close() }
        let login = try connection.request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1","device_class":"mobile"}"#)
        #expect(login.status == 200)
        switch dropInKind {
        case .webhooks:
            let deliveries = try #require(receiver).await { $0.contains { $0.type == "login.new_device" } }
            #expect(deliveries.contains { $0.type == "login.new_device" && $0.verified && $0.data["username"] == "alice" }, "\(deliveries) \(errors())")
        case .introspection:
            let secret = try String(contentsOfFile: secretPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let token = try #require(login.json["token"] as? String)
            let form = "token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)
            let basic = Data("kong:\(secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret)".utf8).base64EncodedString()
            try connection.send("POST /v1/introspect HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic \(basic)\r\n"
                                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n" + form)
            let answer = try connection.readResponse()
            #expect(answer.status == 200 && answer.json["active"] as? Bool == true && answer.json["username"] as? String == "alice", "\(answer.text) \(errors())")
        }
        server.send(SIGTERM)
        server.waitUntilExit()
        #expect(server.terminationStatus == 0)
        // The one warning: /etc/default/baton as shipped names the placeholder host, which the
        // start points out (every DPoP login would fail until it is set).
        let warnings = errors().split(separator: "\n").filter { $0.contains("Warning") }
        #expect(warnings.count == 1 && warnings[0].hasPrefix("Warning: --public-url (BATON_PUBLIC_URL) is https://auth.example.com, a domain reserved for examples"),
                "\(errors())")
    }

    /// `readelf --dynamic`: NEEDED libraries, RUNPATH/RPATH.
    func readelfDynamic(_ path: String) throws -> String {
        try runProcess("/usr/bin/readelf", ["--dynamic", path]).out
    }
}

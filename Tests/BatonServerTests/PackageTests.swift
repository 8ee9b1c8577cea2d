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
        #expect(files == [
            "/etc/default/baton", "/etc/nginx/conf.d/baton-zones.conf", "/etc/nginx/sites-available/baton",
            "/etc/nginx/snippets/baton-proxy-headers.conf", "/etc/nginx/snippets/baton-proxy.conf",
            "/lib/systemd/system/baton.service", "/usr/bin/baton",
            "/usr/share/doc/baton/CHANGELOG.md", "/usr/share/doc/baton/README.md", "/usr/share/doc/baton/admin.md",
            "/usr/share/doc/baton/api.md", "/usr/share/doc/baton/changelog.gz", "/usr/share/doc/baton/copyright",
            "/usr/share/doc/baton/deploy.md", "/usr/share/doc/baton/design.md", "/usr/share/doc/baton/examples/Caddyfile",
            "/usr/share/lintian/overrides/baton",
        ])
        // The shipped files are the repository's, byte for byte.
        let nginxFiles = files.filter { $0.hasPrefix("/etc/nginx/") }.map { ($0, "deploy/nginx/" + $0.dropFirst("/etc/nginx/".count)) }
        let sources = [("/lib/systemd/system/baton.service", "deploy/systemd/baton.service"), ("/etc/default/baton", "deploy/default/baton"),
                       ("/usr/share/doc/baton/deploy.md", "docs/deploy.md"),
                       ("/usr/share/doc/baton/examples/Caddyfile", "deploy/caddy/Caddyfile")] + nginxFiles
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

    /// `readelf --dynamic`: NEEDED libraries, RUNPATH/RPATH.
    func readelfDynamic(_ path: String) throws -> String {
        try runProcess("/usr/bin/readelf", ["--dynamic", path]).out
    }
}

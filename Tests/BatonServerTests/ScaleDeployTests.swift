import Foundation
import Testing

/// The three-node example of deploy/scale/ (Patroni + etcd + PostgreSQL, three Baton
/// instances, nginx over them), checked by the tools that will read each file: Patroni's own
/// validator, `systemd-analyze verify`, `nginx -t` in Debian's layout; and the files agree
/// with each other on who the three nodes are.
struct ScaleDeployTests {
    static let scale = repositoryRoot + "/deploy/scale"
    static let nodes = ["db1": "10.0.0.11", "db2": "10.0.0.12", "db3": "10.0.0.13"]

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/patroni"), "needs Debian's patroni (./scripts/test installs it)"))
    func patroniConfigurationPassesPatronisValidator() throws {
        // The validator connects to every etcd host (they must be reachable) and to the listen
        // addresses (they must be free): loopback stand-ins for those; the connect addresses
        // (which must not be loopback) stay db1's.
        let etcdStandIns = try (1...3).map { _ in try EchoApplication() }
        var text = try String(contentsOfFile: Self.scale + "/patroni/15-baton.yml", encoding: .utf8)
        for (index, standIn) in etcdStandIns.enumerated() {
            text = text.replacingOccurrences(of: "10.0.0.1\(index + 1):2379", with: "127.0.0.1:\(standIn.port)")
        }
        for port in ["8008", "5432"] {
            text = text.replacingOccurrences(of: "listen: 10.0.0.11:\(port)", with: "listen: 127.0.0.1:\(try NginxProcess.freePort())")
        }
        let directory = try temporaryDirectory("baton-patroni-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binaries = try PostgresBinaries.find()
        text = text.replacingOccurrences(of: "/var/lib/postgresql/15/baton", with: directory + "/data")
            .replacingOccurrences(of: "/usr/lib/postgresql/15/bin", with: binaries.directory)
        try text.write(toFile: directory + "/config.yml", atomically: true, encoding: .utf8)
        let result = try runCommand("/usr/bin/patroni", ["--validate-config", directory + "/config.yml"])
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stdout)\(result.stderr)")

        // The check bites: a configuration without the PostgreSQL section's user fails it.
        try text.replacingOccurrences(of: "      username: replicator\n", with: "").write(toFile: directory + "/broken.yml", atomically: true, encoding: .utf8)
        let broken = try runCommand("/usr/bin/patroni", ["--validate-config", directory + "/broken.yml"])
        #expect(broken.status != 0 && (broken.stdout + broken.stderr).contains("replication"), "\(broken.stdout)\(broken.stderr)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func batonUnitWithThePostgresDropInVerifies() throws {
        let directory = try temporaryDirectory("baton-unit-")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The packaged unit as in DeployFileTests, its settings the scale example's, and the drop-in beside it.
        let unit = try String(contentsOfFile: "\(repositoryRoot)/deploy/systemd/baton.service", encoding: .utf8)
            .replacingOccurrences(of: "ExecStart=/usr/bin/baton", with: "ExecStart=" + batonBinary)
            .replacingOccurrences(of: "EnvironmentFile=/etc/default/baton", with: "EnvironmentFile=\(Self.scale)/baton/default-baton")
        try unit.write(toFile: directory + "/baton.service", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/baton.service.d", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.scale + "/baton/baton.service.d/postgresql.conf", toPath: directory + "/baton.service.d/postgresql.conf")
        let result = try runCommand("/usr/bin/systemd-analyze", ["verify", directory + "/baton.service"])
        let output = result.stdout + result.stderr
        #expect(result.status == 0, "\(output)")
        #expect(!output.contains("baton.service:") && !output.contains("postgresql.conf:"), "\(output)")
    }

    @Test(.enabled(if: OperatorShell.isAvailable && nginxBinary != nil && FileManager.default.fileExists(atPath: "/etc/nginx/nginx.conf"),
                   "needs Debian's nginx and a private mount namespace (root)"))
    func nginxUpstreamOverThreeInstancesPassesNginxTestInDebiansLayout() throws {
        let standIn = try NginxStandIn(commonName: "auth.example.com")
        let nginx = standIn.nginx
        // As deploy/scale/README.md says: the site's upstream baton_api block replaced by the three-instance one.
        let site = nginx + "/sites-available/baton"
        let shipped = try String(contentsOfFile: site, encoding: .utf8)
        let upstream = try String(contentsOfFile: Self.scale + "/nginx/upstream-baton_api.conf", encoding: .utf8)
        let block = try #require(shipped.range(of: #"upstream baton_api \{[^}]*\}\n"#, options: .regularExpression))
        try shipped.replacingCharacters(in: block, with: upstream).write(toFile: site, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: nginx + "/sites-enabled/baton", withDestinationPath: "../sites-available/baton")
        let outcome = try standIn.shell().run("nginx -t && nginx -T 2>/dev/null | grep -c 'server 10.0.0.1[123]:8080'\n")
        #expect(outcome.status == 0, "\(outcome.transcript)")
        #expect(outcome.transcript.contains("test is successful") && outcome.transcript.contains("\n3"), "\(outcome.transcript)")
    }

    @Test func theNodesAgreeOnWhoTheThreeNodesAre() throws {
        let etcdCluster = Self.nodes.sorted { $0.key < $1.key }.map { "\($0.key)=http://\($0.value):2380" }.joined(separator: ",")
        for (name, address) in Self.nodes {
            let etcd = try settings(Self.scale + "/etcd/default-etcd.\(name)")
            #expect(etcd["ETCD_NAME"] == name)
            #expect(etcd["ETCD_INITIAL_CLUSTER"] == etcdCluster)
            #expect(etcd["ETCD_LISTEN_PEER_URLS"] == "http://\(address):2380" && etcd["ETCD_ADVERTISE_CLIENT_URLS"] == "http://\(address):2379")
            let patroni = try settings(Self.scale + "/patroni/env.conf.\(name)")
            #expect(patroni["PATRONI_NAME"] == name)
            #expect(patroni["PATRONI_POSTGRESQL_CONNECT_ADDRESS"] == "\(address):5432" && patroni["PATRONI_RESTAPI_CONNECT_ADDRESS"] == "\(address):8008")
        }
        let sortedAddresses = Self.nodes.values.sorted()
        let patroniConfig = try String(contentsOfFile: Self.scale + "/patroni/15-baton.yml", encoding: .utf8)
        #expect(patroniConfig.contains("hosts: " + sortedAddresses.map { "\($0):2379" }.joined(separator: ",")))
        // Baton reaches every PostgreSQL node and keeps the writable one.
        let baton = try settings(Self.scale + "/baton/default-baton")
        let uri = try #require(baton["BATON_DB"])
        #expect(uri.hasPrefix("postgresql://baton@" + sortedAddresses.map { "\($0):5432" }.joined(separator: ",") + "/baton?"))
        #expect(uri.contains("target_session_attrs=read-write"))
        let upstream = try String(contentsOfFile: Self.scale + "/nginx/upstream-baton_api.conf", encoding: .utf8)
        for address in sortedAddresses { #expect(upstream.contains("server \(address):8080")) }
    }

    /// The NAME=value lines of an environment file.
    func settings(_ path: String) throws -> [String: String] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }
        return Dictionary(lines.map { line in
            let equals = line.firstIndex(of: "=")!
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }, uniquingKeysWith: { $1 })
    }
}

import Foundation
import Testing

/// Issue 32 (4): every ```sh block of README.md and docs/*.md is either run by a test (marked
/// `<!-- test: NAME -->` above it, and taken by `DocumentedBlock.named("NAME", …)` in a test,
/// or by one of the check scripts scripts/test runs: `run_block NAME` in scripts/check-systemd,
/// which runs it on a real systemd, or the marker itself in scripts/check-prometheus), or
/// listed here with why it is not run here. A new block fails this test until it is one or
/// the other, so the docs' commands cannot drift from the code unnoticed.
struct DocumentedCommandsTests {
    /// A ```sh block: the document, its first line, and the test marker above it, if any.
    struct Block: CustomStringConvertible {
        var document: String
        var firstLine: String
        var marker: String?
        var description: String { "\(document): \(firstLine)" }
    }

    /// Blocks not run by the tests, by document and first line, with why.
    static let notRunHere: [String: String] = [
        "docs/security.md: swift build --build-tests":
            "the measurements behind issue 28's webhook figures (a 300,000-event backlog watched for 30 s, a throwaway PostgreSQL); the attacks themselves run in the suite as WebhookStallTests",
        "README.md: ./scripts/run           # set up and run Baton on 127.0.0.1:8080 (release build; database: ./baton.db)":
            "the two top-level commands: a foreground server on port 8080, and the test command itself",
        "README.md: $ ./scripts/run admin user add alice --password-stdin <<< 'correct horse battery'    # after the build's lines:":
            "an interactive session on port 8080 with job control (`&`, `kill %1`); the API tests make the same requests",
        "docs/api.md: url=http://127.0.0.1:8080":
            "needs a server on port 8080 and jq; the DPoP tests run the flow, JOSEInteropTests with the same joserfc",
        "docs/api.md: $ echo 'correct horse battery' | baton admin user add alice --password-stdin --db ./baton.db":
            "an interactive session on port 8080; the CLI and endpoint tests run the same commands",
        "docs/api.md: $ T=$(curl -s localhost:8080/v1/login -H 'Content-Type: application/json' \\":
            "an interactive session on port 8080; StepUpEndpointTests make the same requests",
        "docs/benchmarks.md: swift build -c release --product baton-bench": "a benchmark: minutes of load on a quiet machine",
        "docs/benchmarks.md: scripts/bench-postgres --rounds 3 --seconds 5          # with a synchronous standby": "a benchmark",
        "docs/benchmarks.md: ./scripts/bench-server                                   # 3 rounds, exchange 60 s, other runs 10 s": "a benchmark",
        "docs/benchmarks.md: sh ../shared/bench/sidebyside/run.sh --baton <before>              # 3 rounds × 10 s":
            "a benchmark from ../shared, outside this repository",
        "docs/benchmarks.md: sh ../shared/bench/sidebyside/run.sh --baton .build/release/baton     # 3 rounds x 10 s":
            "a benchmark from ../shared, outside this repository",
        "docs/benchmarks.md: ./scripts/bench-server --rounds 3     # raw outputs: bench-results/20261122T152103Z (not in git)": "a benchmark",
        "docs/benchmarks.md: ./scripts/bench-server --compare main      # 3 rounds; exchange 60 s, every other run 10 s": "a benchmark",
        "docs/benchmarks.md: bench/probe-checkpoints.sh .build/release/baton 12 5 32   # 12 back-to-back 5 s wrk slices, 32 connections": "a benchmark",
        "docs/benchmarks.md: scripts/bench-dpop --rounds 5 --seconds 5": "a benchmark",
        "docs/benchmarks.md: scripts/bench-webhooks --rounds 5 --seconds 8    # builds the release binary first": "a benchmark",
        "docs/benchmarks.md: scripts/bench-gateways --rounds 3 --seconds 5 --baton .build-release/release/baton    # builds .build/release/baton without --baton": "a benchmark",
        "docs/client.md: ./scripts/demo": "DemoScriptTests runs scripts/demo itself, on a free port (BATON_DEMO_PORT=0)",
        "docs/deploy.md: ./scripts/package-deb          # prints the package's absolute path, e.g. /root/baton/.build/deb/baton_0.2.0_amd64.deb":
            "scripts/test runs it and hands the .deb to PackageTests",
        "docs/deploy.md: baton serve --trusted-proxy 127.0.0.1/32 --public-url https://app.example.com \\":
            "needs Envoy, which is not packaged for Debian or PyPI; EnvoyAuthzTests runs --authz-step-up and the checks, EnvoyConfigTests reads envoy.yaml",
        "docs/deploy.md: install -d /etc/traefik/dynamic":
            "writes this machine's /etc/traefik and starts Traefik on ports 80 and 443; TraefikProcess runs the same two files, as shipped, on test ports",
        "docs/deploy.md: apt-get install -y haproxy":
            "writes this machine's /etc/haproxy and reloads its HAProxy; HAProxyProcess runs the same two files, as shipped, on a test port",
        "docs/webhooks.md: install -d -m 0700 /etc/baton":
            "the first block is a template (`baton serve ...`); the drop-in block after it is run by PackageTests",
    ]

    /// Every ```sh block of README.md and docs/*.md.
    static func blocks() throws -> [Block] {
        let documents = ["README.md"] + (try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/docs"))
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        var blocks: [Block] = []
        for document in documents {
            let lines = try String(contentsOfFile: repositoryRoot + "/" + document, encoding: .utf8).components(separatedBy: "\n")
            for (index, line) in lines.enumerated() where line == "```sh" && index + 1 < lines.count {
                let above = index > 0 ? lines[index - 1] : ""
                let marker = above.hasPrefix("<!-- test: ") && above.hasSuffix(" -->")
                    ? String(above.dropFirst("<!-- test: ".count).dropLast(" -->".count)) : nil
                blocks.append(Block(document: document, firstLine: lines[index + 1], marker: marker))
            }
        }
        return blocks
    }

    @Test func everyShellBlockIsRunByATestOrListedWithWhy() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count > 20)
        let testSources = try FileManager.default.subpathsOfDirectory(atPath: repositoryRoot + "/Tests").filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOfFile: repositoryRoot + "/Tests/" + $0, encoding: .utf8) }.joined(separator: "\n")
        let checkScripts = try ["scripts/check-systemd", "scripts/check-prometheus"]
            .map { try String(contentsOfFile: repositoryRoot + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
        for block in blocks {
            if let name = block.marker {
                let taken = testSources.contains("DocumentedBlock.named(\"\(name)\"")
                    || ["run_block \(name) ", "run_block_answering \(name) ", "doc_block \(name) ", "<!-- test: \(name) -->"].contains { checkScripts.contains($0) }
                #expect(taken, "\(block) is marked <!-- test: \(name) --> but no test takes DocumentedBlock.named(\"\(name)\")")
            } else {
                #expect(Self.notRunHere[block.description] != nil,
                        "\(block) is neither run by a test (<!-- test: NAME --> above it) nor listed in DocumentedCommandsTests.notRunHere with why")
            }
        }
        // The list names only blocks that exist and are not run, so it stays true.
        let unmarked = Set(blocks.filter { $0.marker == nil }.map(\.description))
        for listed in Self.notRunHere.keys { #expect(unmarked.contains(listed), "notRunHere lists \(listed), which is not an unmarked ```sh block") }
    }
}

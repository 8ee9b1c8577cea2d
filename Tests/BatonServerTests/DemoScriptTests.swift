import BatonTestSupport
import Foundation
import Testing

/// `./scripts/demo` (docs/client.md, "The demo"), run as a newcomer runs it, on the built
/// binaries: the server, the shipped nginx files and the backend come up, the demo logs in,
/// its calls exchange the short-lived token on the way, `--logout` ends the session, and the
/// script leaves nothing behind.
@Suite(.enabled(if: nginxBinary != nil, "needs nginx (./scripts/test installs it)"))
struct DemoScriptTests {
    @Test func demoScriptRunsTheClientThroughTheShippedGatewayAndLeavesNothingBehind() throws {
        // A TMPDIR of its own: whatever the script leaves there is a leftover.
        let scratch = try temporaryDirectory("baton-demo-script-")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let run = try runCommand(repositoryRoot + "/scripts/demo", [], environment: [
            "TMPDIR": scratch,
            "BATON_DEMO_PORT": "0",  // a free port: 8443 may be taken on a test machine
            "BATON_PRODUCTS": productsDirectory.path,  // built already; swift test holds .build's lock
        ])
        let output = run.stdout + run.stderr
        #expect(run.status == 0, "\(output)")
        #expect(run.stdout.contains("   no session (Please log in.); logging in as alice through http://127.0.0.1:"), "\(output)")
        #expect(run.stdout.contains("2. GET /api/orders (call 3 of 3)"), "\(output)")
        #expect(run.stdout.contains(#""x-baton-username":"alice""#), "the backend saw the gateway's identity headers: \(output)")
        #expect(run.stdout.contains("  event: token exchanged for its successor (generation 1)"), "\(output)")
        // The second run (`--logout`): the stored session, no call, the logout.
        let logout = run.stdout.components(separatedBy: " --logout\n").last ?? ""
        #expect(logout.contains("   stored session found: chain ") && logout.contains("2. Logging out")
                && logout.contains("   the server revoked the session") && !logout.contains("GET"), "\(output)")
        #expect(run.stderr.contains("demo: stopped baton, nginx and the backend; removed \(scratch)/baton-demo."), "\(output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch) == [], "the demo's leftovers")
    }
}

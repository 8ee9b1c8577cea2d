import Foundation
import Testing

/// Baton behind a live Caddy running deploy/caddy/Caddyfile as shipped: what only Caddy does.
/// The guarantees every gateway gives (identity and spoofed headers, the audited address,
/// verify's refusals, step-up and its bypasses) are GatewayMatrixTests', run against Caddy too.
@Suite(.serialized, .enabled(if: caddyBinary != nil, "needs Debian's caddy (./scripts/test installs it)"))
struct CaddyTests {
    let baton: ServerProcess
    let app: EchoApplication
    let caddy: CaddyProcess

    init() throws {
        // Caddy connects from 127.0.0.1; clients come from other loopback addresses.
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        app = try EchoApplication()
        caddy = try CaddyProcess(batonPort: baton.port, appPort: app.port)
    }

    @Test func errorsCaddyProducesAnswerInBatonsShape() throws {
        let body = "{\"username\":\"" + String(repeating: "a", count: 20 * 1024) + "\"}"
        let tooLarge = try caddy.request("POST", "/v1/login", from: "127.0.0.9", json: body)
        #expect(tooLarge.status == 413 && tooLarge.error == "payload_too_large", "\(tooLarge.status) \(tooLarge.text)")
        #expect(tooLarge.headers["content-type"] == "application/json")
        #expect(baton.stop() == 0)
        let down = try caddy.request("GET", "/api/orders", from: "127.0.0.9", token: "x")
        #expect(down.status == 503 && down.error == "unavailable" && down.headers["retry-after"] == "1", "\(down.status) \(down.text)")
        #expect(down.headers["content-type"] == "application/json")
    }
}

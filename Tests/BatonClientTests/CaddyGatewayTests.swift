@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Baton behind a live Caddy running the shipped deploy/caddy/Caddyfile, with the echo
/// application behind `forward_auth`. Caddy connects from 127.0.0.1, Baton's trusted proxy.
struct CaddyGatewayFixture {
    let baton: ServerProcess
    let app: EchoApplication
    let caddy: CaddyProcess

    /// Puts the application and Caddy in front of a running Baton (trusting 127.0.0.1).
    init(baton: ServerProcess) throws {
        self.baton = baton
        app = try EchoApplication()
        caddy = try CaddyProcess(batonPort: baton.port, appPort: app.port)
    }

    /// The gateway's base URL.
    var url: URL { URL(string: "http://127.0.0.1:\(caddy.port)")! }
}

/// The client through the shipped Caddyfile, as GatewayTests and StepUpClientTests through nginx.
@Suite(.serialized, .ownThreads, .enabled(if: caddyBinary != nil, "needs Debian's caddy (./scripts/test installs it)"))
struct CaddyGatewayTests {
    @Test func expiredTokenAtTheGatewayIsExchangedAndReplayedTransparently() async throws {
        // The frozen clock never sees the expiry: Caddy's 401 token_expired (verify's, passed on
        // by forward_auth) has to.
        let store = MemoryCredentialStore(), clock = TestClock(frozen: true)
        let (server, first) = try await serverAfterAShortLivedLogin(into: store, clock: clock, arguments: ["--trusted-proxy", "127.0.0.1/32"])
        let gateway = try CaddyGatewayFixture(baton: server)
        let session = makeSession(gateway.url, store: store, clock: clock)
        let answers = try await withThrowingTaskGroup(of: (Data, Int).self) { group in
            for index in 0..<20 {
                group.addTask {
                    let (data, response) = try await session.send(URLRequest(url: URL(string: "/api/orders/\(index)")!))
                    return (data, response.statusCode)
                }
            }
            return try await group.reduce(into: [(Data, Int)]()) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.1 == 200 })
        for (data, _) in answers {
            let echo = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: String])
            #expect(echo["x-baton-username"] == "alice" && echo["authorization"] == nil)
        }
        #expect(try server.exchangeCount() == 1)
        #expect(try server.verifyRejections() >= 2, "the gateway's 401 was the trigger")
        #expect(await session.generation == 1)
        withExtendedLifetime(first) {}
    }

    @Test func revokedSessionAtTheGatewaySurfacesLoginRequired() async throws {
        let gateway = try CaddyGatewayFixture(baton: startServer(["--trusted-proxy", "127.0.0.1/32"]))
        let session = makeSession(gateway.url)
        try await session.loginAlice()
        #expect(try await session.get("/api/profile") == 200)
        let chain = try #require(await session.chainID)
        let (status, _, err) = try runBaton(["admin", "revoke", "--chain", chain, "--db", gateway.baton.databasePath])
        #expect(status == 0, "\(err)")
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/api/profile") }
        #expect(error == .loginRequired(.revoked(.admin)))
    }

    @Test func stepUpChallengeSurfacesAndConfirmThenRetrySucceeds() async throws {
        let gateway = try CaddyGatewayFixture(baton: startServer(["--trusted-proxy", "127.0.0.1/32"]))
        let session = makeSession(gateway.url)
        try await session.loginAlice()
        try gateway.baton.ageAuthentication(ofChain: try #require(await session.chainID), by: 301)
        let transfer = URLRequest(url: URL(string: "/api/transfer/42")!)
        let error = await #expect(throws: BatonClientError.self) { try await session.send(transfer) }
        #expect(error == .stepUpRequired(maxAge: 300))
        #expect(try await session.get("/api/orders") == 200)

        let authTime = try await session.confirm(password: "correct horse battery")
        let (data, response) = try await session.send(transfer)
        #expect(response.statusCode == 200)
        let echo = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(echo["x-baton-auth-time"] == String(Int(authTime.timeIntervalSince1970)))
        #expect(try gateway.baton.exchangeCount() == 0)
        #expect(await session.generation == 0)
    }
}

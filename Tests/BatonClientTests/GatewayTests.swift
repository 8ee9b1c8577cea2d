@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The client through the shipped nginx rules: an app endpoint behind `auth_request`.
@Suite(.serialized, .ownThreads) struct GatewayTests {
    let fixture: GatewayFixture
    var baton: ServerProcess { fixture.baton }
    var gateway: URL { fixture.url }

    init() throws { fixture = try GatewayFixture() }

    @Test func expiredTokenAtTheGatewayIsExchangedAndReplayedTransparently() async throws {
        for round in 1...2 {
            // The frozen clock never sees the expiry: the gateway's 401 token_expired has to.
            let store = MemoryCredentialStore(), clock = TestClock(frozen: true)
            let reservation = try PortReservation()
            let (server, first) = try await serverAfterAShortLivedLogin(into: store, clock: clock,
                                                                        arguments: GatewayFixture.batonArguments(reservation))
            let gateway = try GatewayFixture(baton: server, reservation: reservation)
            let session = makeSession(gateway.url, store: store, clock: clock)
            let answers: [(Data, Int)]
            do {
                answers = try await withThrowingTaskGroup(of: (Data, Int).self) { group in
                    for index in 0..<20 {
                        group.addTask {
                            let (data, response) = try await session.send(URLRequest(url: URL(string: "/api/orders/\(index)")!))
                            return (data, response.statusCode)
                        }
                    }
                    return try await group.reduce(into: [(Data, Int)]()) { $0.append($1) }
                }
            } catch {
                let log = (try? String(contentsOfFile: gateway.nginx.directory + "/error.log", encoding: .utf8)) ?? ""
                Issue.record("round \(round): \(error); nginx: \(log.split(separator: "\n").filter { !$0.contains("unexpected status: 401") }.suffix(10))")
                throw error
            }
            #expect(answers.allSatisfy { $0.1 == 200 }, "round \(round)")
            for (data, _) in answers {
                let echo = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: String])
                #expect(echo["x-baton-username"] == "alice" && echo["authorization"] == nil)
            }
            #expect(try server.exchangeCount() == 1, "round \(round)")
            #expect(try server.verifyRejections() >= 2, "the gateway's 401 was the trigger")
            #expect(await session.generation == 1)
            withExtendedLifetime(first) {}
        }
    }

    /// Issue 42, F3, reproduced through the shipped nginx files: the bank API's own
    /// `POST /api/otp/verify` answering `401 {"error":"session_expired"}` (with Baton's
    /// challenge and even Baton's mark, which nginx removes) logged the user out and left the
    /// chain live on the server. Now the app gets the 401 as an HTTP error and the session
    /// goes on; a refusal by Baton still ends it.
    @Test func theAppsOwn401EndsNothingAndBatonsStillDoes() async throws {
        let session = makeSession(gateway)
        try await session.loginAlice()
        var request = URLRequest(url: URL(string: EchoApplication.ownUnauthorizedPath)!)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"code":"123456"}"#.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        do {
            _ = try await session.send(request)
            Issue.record("the app's 401 was not handed to the app")
        } catch let error as BatonClientError {
            guard case .http(let status, let serverError, _, _) = error else { Issue.record("\(error)"); return }
            #expect(status == 401 && serverError?.code == "session_expired")
        }
        guard case .loggedIn = await session.status else { Issue.record("logged out by the app's 401: \(await session.status)"); return }
        #expect(try await session.get("/api/profile") == 200)
        let chain = try #require(await session.chainID)
        #expect(try runBaton(["admin", "revoke", "--chain", chain, "--db", baton.databasePath]).0 == 0)
        await #expect(throws: BatonClientError.self) { try await session.get("/api/profile") }
        guard case .loggedOut = await session.status else { Issue.record("not ended by Baton's refusal: \(await session.status)"); return }
    }

    @Test func revokedSessionAtTheGatewaySurfacesLoginRequired() async throws {
        let session = makeSession(gateway)
        let events = EventRecorder(session)
        try await session.loginAlice()
        #expect(try await session.get("/api/profile") == 200)
        let chain = try #require(await session.chainID)
        let (status, _, err) = try runBaton(["admin", "revoke", "--chain", chain, "--db", baton.databasePath])
        #expect(status == 0, "\(err)")
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/api/profile") }
        #expect(error == .loginRequired(.revoked(.admin)))
        #expect(await eventuallyAsync { events.events.contains(.loginRequired(.revoked(.admin))) })
    }

    @Test func everyRequestCarriesTheDeviceIDTheLibrarysUserAgentAndTheAppsHeaders() async throws {
        // The echo application shows the app's header (the gateway clears every X-Baton-* a client sends).
        let configuration = BatonConfiguration(baseURL: gateway, appName: "BatonClientTests/1", headers: ["X-App-Locale": "de-CH"])
        let session = BatonSession(configuration: configuration, store: MemoryCredentialStore())
        try await session.loginAlice()
        let (data, _) = try await session.send(URLRequest(url: URL(string: "/api/profile")!))
        let echo = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(echo["x-app-locale"] == "de-CH")
        let (_, out, _) = try runBaton(["admin", "audit", "--format", "json", "--kind", "login_succeeded", "--db", baton.databasePath])
        let event = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        #expect(event["user_agent"] as? String == "BatonClientTests/1 BatonClient/\(BatonConfiguration.libraryVersion)")
        #expect((event["device_id"] as? String)?.count == 36)
    }

    @Test func demoLogsInAndCallsTheEndpointThroughTheGatewayPrintingEachStep() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--gateway", gateway.absoluteString, "--user", "alice", "--path", "/api/hello", "--store", directory + "/demo.json"]
        let (status, out, err) = try runProduct("baton-demo", arguments, stdin: "correct horse battery\n")
        #expect(status == 0, "\(out)\(err)")
        #expect(out.contains("1. Restoring the session from \(directory)/demo.json"))
        #expect(out.contains("logged in: chain "))
        #expect(out.contains("2. GET /api/hello (call 1 of 1)"))
        #expect(out.contains("   200: {") && out.contains(#""x-baton-username":"alice""#))
        #expect(!out.contains("event: token exchanged"))  // a fresh token is used as it is
        // The next run finds the stored session and needs no password; --logout ends it.
        let (again, secondOut, _) = try runProduct("baton-demo", arguments + ["--logout"], stdin: "")
        #expect(again == 0 && secondOut.contains("stored session found") && secondOut.contains("the server revoked the session"), "\(secondOut)")
        #expect(!secondOut.contains("GET /api/hello"), "--logout alone calls nothing first: \(secondOut)")
        let (usage, _, usageErr) = try runProduct("baton-demo", ["--gateway", "nowhere"], stdin: "")
        #expect(usage == 64 && usageErr.hasPrefix("Error: --gateway needs a URL"))
    }
}

@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Step-up (RFC 9470) from the client: the shipped critical location (`/api/transfer/`, verify
/// with max_age=300) in a live nginx.
@Suite(.serialized, .ownThreads) struct StepUpClientTests {
    let fixture: GatewayFixture
    var baton: ServerProcess { fixture.baton }
    var gateway: URL { fixture.url }

    init() throws { fixture = try GatewayFixture() }

    /// A logged-in session whose authentication is older than the critical location allows.
    func sessionWithAnOldAuthentication() async throws -> BatonSession {
        let session = makeSession(gateway)
        try await session.loginAlice()
        try baton.ageAuthentication(ofChain: try #require(await session.chainID), by: 301)
        return session
    }

    @Test func challengeSurfacesAsStepUpRequiredAndConfirmThenRetrySucceeds() async throws {
        let session = try await sessionWithAnOldAuthentication()
        let events = EventRecorder(session)
        let transfer = URLRequest(url: URL(string: "/api/transfer/42")!)
        let error = await #expect(throws: BatonClientError.self) { try await session.send(transfer) }
        #expect(error == .stepUpRequired(maxAge: 300))
        // The challenge neither exchanged nor logged out; ordinary locations still pass.
        #expect(await session.generation == 0)
        #expect(try await session.get("/api/orders") == 200)

        let authTime = try await session.confirm(password: "correct horse battery")
        #expect(abs(authTime.timeIntervalSinceNow) < 120)
        let (data, response) = try await session.send(transfer)
        #expect(response.statusCode == 200)
        let echo = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(echo["x-baton-auth-time"] == String(Int(authTime.timeIntervalSince1970)))
        #expect(try baton.exchangeCount() == 0)
        #expect(await session.generation == 0)
        #expect(!events.events.contains { if case .loginRequired = $0 { true } else { false } })
    }

    /// Defect 11: five critical requests challenged at once ask the user once and confirm once.
    @Test func concurrentChallengedRequestsShareOnePromptAndOneConfirmation() async throws {
        let session = try await sessionWithAnOldAuthentication()
        let asked = Counter()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<5 {
                group.addTask {
                    try await session.send(URLRequest(url: URL(string: "/api/transfer/\(index)")!)) { _ in
                        asked.increment()
                        return "correct horse battery"
                    }.1.statusCode
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200, 200, 200])
        #expect(asked.value == 1)
        #expect(try baton.metric("baton_confirmations_total{outcome=\"succeeded\"}") == 1)
    }

    @Test func sendWithAPasswordProviderConfirmsOnceAndRetries() async throws {
        let session = try await sessionWithAnOldAuthentication()
        let asked = Counter()
        let (_, response) = try await session.send(URLRequest(url: URL(string: "/api/transfer/7")!)) { maxAge in
            asked.increment()
            #expect(maxAge == 300)
            return "correct horse battery"
        }
        #expect(response.statusCode == 200 && asked.value == 1)
        // Confirmed: the next critical request passes without asking.
        #expect(try await session.get("/api/transfer/8") == 200)
        // A user who cancels the password prompt gets the challenge back.
        try baton.ageAuthentication(ofChain: try #require(await session.chainID), by: 301)
        let error = await #expect(throws: BatonClientError.self) {
            try await session.send(URLRequest(url: URL(string: "/api/transfer/9")!)) { _ in nil }
        }
        #expect(error == .stepUpRequired(maxAge: 300))
    }

    @Test func wrongPasswordsKeepTheSessionUntilTheFifthEndsIt() async throws {
        let session = try await sessionWithAnOldAuthentication()
        let events = EventRecorder(session)
        for attempt in 1...4 {
            let error = await #expect(throws: BatonClientError.self) { try await session.confirm(password: "wrong \(attempt)") }
            guard case .http(401, let serverError, _, _) = error else {
                Issue.record("attempt \(attempt): \(String(describing: error))")
                return
            }
            #expect(serverError?.code == "invalid_credentials")
            #expect(try await session.get("/api/orders") == 200, "attempt \(attempt): the session stays")
        }
        let fifth = await #expect(throws: BatonClientError.self) { try await session.confirm(password: "wrong 5") }
        #expect(fifth == .loginRequired(.revoked(.confirmFailed)))
        #expect(await eventuallyAsync { events.events.contains(.loginRequired(.revoked(.confirmFailed))) })
        #expect(await session.status == .loggedOut(.revoked(.confirmFailed)))
    }

    @Test func changingThePasswordEndsTheOtherSessionsAndKeepsThisOne() async throws {
        let phone = makeSession(gateway), tablet = makeSession(gateway)
        try await phone.loginAlice()
        try await tablet.loginAlice()
        let tooShort = await #expect(throws: BatonClientError.self) { try await phone.changePassword(current: "correct horse battery", new: "short") }
        guard case .http(400, let rulesError, _, _) = tooShort else {
            Issue.record("\(String(describing: tooShort))")
            return
        }
        #expect(rulesError?.code == "invalid_request")

        #expect(try await phone.changePassword(current: "correct horse battery", new: "a new horse battery") == 1)
        #expect(try await phone.get("/api/transfer/1") == 200)  // freshly authenticated, same session
        let error = await #expect(throws: BatonClientError.self) { try await tablet.get("/api/orders") }
        #expect(error == .loginRequired(.revoked(.passwordChanged)))
        let oldPassword = await #expect(throws: BatonClientError.self) { try await makeSession(gateway).loginAlice() }
        guard case .http(401, _, _, _) = oldPassword else {
            Issue.record("the old password still logs in: \(String(describing: oldPassword))")
            return
        }
        try await makeSession(gateway).login(username: "alice", password: "a new horse battery")
    }
}

/// A thread-safe counter.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    /// Adds one.
    func increment() { lock.lock(); count += 1; lock.unlock() }
    /// The count.
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

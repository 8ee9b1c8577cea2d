@testable import BatonCore
import BatonStorage
import Testing

/// Login's refusals, throttle and username rules, on both stores.
struct LoginTests {
    @Test(arguments: Backend.allCases)
    func unknownUserAndWrongPasswordAreIndistinguishable(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try db.store.createUser("alice", password: "correct horse battery")
        let wrong = batonError { _ = try db.store.login(LoginRequest(username: "alice", password: "nope-nope", deviceID: "d")) }
        let unknown = batonError { _ = try db.store.login(LoginRequest(username: "mallory", password: "nope-nope", deviceID: "d")) }
        #expect(wrong == .invalidCredentials && unknown == .invalidCredentials)
        #expect(try db.auditEvents(kind: .loginFailed).map(\.detail) == Array(repeating: #"{"reason":"invalid_credentials"}"#, count: 2))
    }

    @Test(arguments: Backend.allCases)
    func fiveFailuresThrottleTheUsernameAndAuditIt(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try db.store.createUser("alice", password: "correct horse battery")
        let request = LoginRequest(username: "alice", password: "guess-guess", deviceID: "d")
        for _ in 0..<5 { #expect(batonError { _ = try db.store.login(request) } == .invalidCredentials) }
        var right = request
        right.password = "correct horse battery"
        #expect(batonError { _ = try db.store.login(right) } == .tooManyAttempts(retryAfterSeconds: 60))
        #expect(try db.auditEvents(kind: .loginThrottled).count == 1)
        db.clock.advance(by: .seconds(61))
        #expect(try db.store.login(right).generation == 0)
    }

    @Test(arguments: Backend.allCases)
    func usernamesAreCaseInsensitiveAndUnique(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try db.store.createUser("Alice", password: "correct horse battery")
        // The error names the stored spelling, so the operator sees which account is in the way.
        #expect(batonError { try db.store.createUser("alice", password: "another password") } == .userExists("Alice"))
        #expect(try db.store.login(LoginRequest(username: "ALICE", password: "correct horse battery", deviceID: "d")).generation == 0)
    }

    @Test(arguments: Backend.allCases, [("", "d"), ("alice", ""), ("alice", String(repeating: "x", count: 257)), ("alice", "bad\u{7}id")])
    func invalidLoginFieldsAreNamed(_ backend: Backend, _ fields: (String, String)) async throws {
        let (username, device) = fields
        let db = try await BackendDatabase(backend)
        let error = batonError { _ = try db.store.login(LoginRequest(username: username, password: "whatever1", deviceID: device)) }
        guard case .invalidArgument(let text) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(text.hasPrefix(username.isEmpty ? "username" : "device_id"))
    }
}

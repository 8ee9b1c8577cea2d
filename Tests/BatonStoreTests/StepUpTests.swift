@testable import BatonCore
import BatonStorage
import Testing

/// Step-up on both stores with a hand-moved clock: auth_time, confirm, the failure counter and
/// its revocation, max_age at verify, and the self-service password change.
struct StepUpTests {
    static let password = "correct horse battery"

    /// The chain's stored auth_time and failure count.
    func row(_ db: BackendDatabase, _ chain: ChainID) throws -> (authTime: Int64, failures: Int64, reason: String?) {
        let row = try #require(try db.rows("SELECT auth_time, confirm_failures, revoked_reason FROM chains WHERE id = \(chain.rawValue)").first)
        return (try #require(row[0].flatMap { Int64($0) }), try #require(row[1].flatMap { Int64($0) }), row[2])
    }

    /// A context from its own address, so that only the per-username throttle key is shared.
    func from(_ index: Int) -> RequestContext { RequestContext(ip: "198.51.100.\(index)", userAgent: "TestApp/1.0") }

    @Test(arguments: Backend.allCases)
    func authTimeIsTheLoginAndSurvivesExchanges(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let loggedInAt = db.clock.now()
        let first = try db.login()
        db.clock.advance(by: .seconds(120))
        let second = try db.store.exchange(first.token)
        db.clock.advance(by: .seconds(120))
        let third = try db.store.exchange(second.token)
        #expect(try db.store.verify(third.token).authTime == loggedInAt)
        #expect(try row(db, third.chainID).authTime == loggedInAt.milliseconds)
        #expect(try db.store.verify(third.token, maxAge: .seconds(240)).chainID == third.chainID)
        #expect(batonError { _ = try db.store.verify(third.token, maxAge: .seconds(239)) } == .insufficientUserAuthentication(maxAge: 239))
    }

    @Test(arguments: Backend.allCases)
    func confirmSetsAuthTimeWithoutExchanging(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        db.clock.advance(by: .seconds(600))
        #expect(batonError { _ = try db.store.verify(bundle.token, maxAge: .seconds(300)) } == .insufficientUserAuthentication(maxAge: 300))
        let confirmedAt = try db.store.confirm(bundle.token, password: Self.password)
        #expect(confirmedAt == db.clock.now())
        // The same token, now recent enough: nothing was exchanged.
        let verified = try db.store.verify(bundle.token, maxAge: .seconds(300))
        #expect(verified.authTime == confirmedAt)
        #expect(try db.auditEvents(kind: .stepUpSucceeded).map(\.detail) == [#"{"operation":"confirm"}"#])
        #expect(try db.auditEvents(kind: .exchanged).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func fifthConsecutiveWrongPasswordRevokesTheChain(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        for attempt in 1...4 {
            #expect(batonError { _ = try db.store.confirm(bundle.token, password: "guess-\(attempt)", context: from(attempt)) } == .wrongPassword)
            #expect(try row(db, bundle.chainID).failures == Int64(attempt))
            #expect(try db.store.verify(bundle.token).chainID == bundle.chainID)  // still alive
        }
        #expect(batonError { _ = try db.store.confirm(bundle.token, password: "guess-5", context: from(5)) } == .chainRevoked(.confirmFailed))
        #expect(try row(db, bundle.chainID).reason == "confirm_failed")
        #expect(batonError { _ = try db.store.verify(bundle.token) } == .chainRevoked(.confirmFailed))
        // Even the right password, an hour later, cannot bring it back.
        db.clock.advance(by: .seconds(3600))
        #expect(batonError { _ = try db.store.confirm(bundle.token, password: Self.password, context: from(6)) } == .chainRevoked(.confirmFailed))
        let failures = try db.auditEvents(kind: .stepUpFailed)
        #expect(failures.count == 5 && failures.last?.detail == #"{"consecutive_failures":5,"operation":"confirm","reason":"invalid_credentials"}"#)
        #expect(try db.auditEvents(kind: .chainRevoked).map(\.detail) == [#"{"reason":"confirm_failed"}"#])
    }

    @Test(arguments: Backend.allCases)
    func aSuccessResetsTheConsecutiveCount(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        for attempt in 1...3 { _ = batonError { _ = try db.store.confirm(bundle.token, password: "guess-guess", context: from(attempt)) } }
        let confirmedAt = try db.store.confirm(bundle.token, password: Self.password, context: from(4))
        #expect(try row(db, bundle.chainID).failures == 0)
        db.clock.advance(by: .seconds(61))  // past the chain's step-up limit (6 a minute)
        for attempt in 5...8 {
            #expect(batonError { _ = try db.store.confirm(bundle.token, password: "guess-guess", context: from(attempt)) } == .wrongPassword)
        }
        #expect(try row(db, bundle.chainID) == (confirmedAt.milliseconds, 4, nil))
    }

    /// Failed logins (from anywhere) do not block a live chain's step-up; the chain's own
    /// limit of 6 confirmations a minute does (docs/security.md, findings 4 and 5).
    @Test(arguments: Backend.allCases)
    func confirmIsLimitedPerChainNotByFailedLogins(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        for attempt in 1...5 {
            let request = LoginRequest(username: "alice", password: "guess-guess", deviceID: "laptop")
            #expect(batonError { _ = try db.store.login(request, context: from(attempt)) } == .invalidCredentials)
        }
        for _ in 1...6 { #expect(try db.store.confirm(bundle.token, password: Self.password, context: from(9)) == db.clock.now()) }
        #expect(batonError { _ = try db.store.confirm(bundle.token, password: Self.password, context: from(9)) } == .tooManyConfirmations(retryAfterSeconds: 60))
        #expect(try row(db, bundle.chainID).failures == 0)  // a throttled attempt checks no password and counts nothing
        #expect(try db.auditEvents(kind: .stepUpFailed).map(\.detail) == [#"{"operation":"confirm","reason":"too_many_attempts","retry_after":60}"#])
        db.clock.advance(by: .seconds(61))
        #expect(try db.store.confirm(bundle.token, password: Self.password, context: from(9)) == db.clock.now())
    }

    /// A thief's wrong confirmations on one chain revoke that chain and block none of the
    /// user's other chains: their step-up (here a password change) still works.
    @Test(arguments: Backend.allCases)
    func wrongConfirmationsOnOneChainDoNotBlockTheOthers(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        let other = try db.login(device: "laptop", deviceClass: .desktop, ip: "192.0.2.99")
        for attempt in 1...5 {
            #expect(batonError { _ = try db.store.confirm(bundle.token, password: "guess-\(attempt)", context: from(attempt)) }
                    == (attempt < 5 ? .wrongPassword : .chainRevoked(.confirmFailed)))
        }
        let changed = try db.store.changePassword(presentedBy: other.token, current: Self.password, new: "a new long passphrase", context: from(9))
        #expect(changed.authTime == db.clock.now())
        #expect(try row(db, other.chainID).failures == 0)
    }

    @Test(arguments: Backend.allCases)
    func confirmAnswersAsVerifyAndCountsNothingForRefusedTokens(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let first = try db.login()
        let second = try db.store.exchange(first.token)
        #expect(batonError { _ = try db.store.confirm(first.token, password: "guess-guess") } == .tokenSuperseded)
        #expect(batonError { _ = try db.store.confirm("bt1_" + String(repeating: "A", count: 80), password: "guess-guess") } == .tokenInvalid)
        #expect(batonError { _ = try db.store.confirm(second.token, password: "") } == .invalidArgument("password must not be empty"))
        db.clock.advance(by: .seconds(901))
        #expect(batonError { _ = try db.store.confirm(second.token, password: Self.password) } == .tokenExpired)
        #expect(try row(db, second.chainID).failures == 0)
        #expect(try db.auditEvents(kind: .stepUpFailed).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func passwordChangeRevokesTheOtherChainsAndKeepsThisOne(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let phone = try db.login(device: "phone-1", deviceClass: .mobile)
        let laptop = try db.login(device: "laptop", deviceClass: .desktop)
        let tablet = try db.login(device: "tablet", deviceClass: .other)
        db.clock.advance(by: .seconds(600))
        let change = try db.store.changePassword(presentedBy: laptop.token, current: Self.password, new: "a new long passphrase")
        #expect(change.authTime == db.clock.now())
        #expect(Set(change.revokedChains) == [phone.chainID, tablet.chainID])
        #expect(batonError { _ = try db.store.verify(phone.token) } == .chainRevoked(.passwordChanged))
        #expect(batonError { _ = try db.store.verify(tablet.token) } == .chainRevoked(.passwordChanged))
        #expect(try db.store.verify(laptop.token, maxAge: .zero).authTime == db.clock.now())
        let old = LoginRequest(username: "alice", password: Self.password, deviceID: "phone-2")
        #expect(batonError { _ = try db.store.login(old) } == .invalidCredentials)
        #expect(try db.store.login(LoginRequest(username: "alice", password: "a new long passphrase", deviceID: "phone-2")).generation == 0)
        let changed = try db.auditEvents(kind: .passwordChanged)
        #expect(changed.count == 1 && changed[0].chainID == laptop.chainID.rawValue)
        #expect(changed[0].detail == #"{"by":"user","revoked_chains":2}"#)
    }

    @Test(arguments: Backend.allCases)
    func passwordChangeAppliesTheUserAddRulesAndCountsAWrongCurrentPassword(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        #expect(batonError { _ = try db.store.changePassword(presentedBy: bundle.token, current: Self.password, new: "short") }
                == .invalidArgument("new_password must be at least 8 bytes (UTF-8)."))
        #expect(batonError { _ = try db.store.changePassword(presentedBy: bundle.token, current: "guess-guess", new: "a new long passphrase") }
                == .wrongPassword)
        #expect(try row(db, bundle.chainID).failures == 1)
        #expect(try db.auditEvents(kind: .stepUpFailed).map(\.detail) == [#"{"consecutive_failures":1,"operation":"password","reason":"invalid_credentials"}"#])
        // The password is unchanged.
        #expect(try db.store.login(LoginRequest(username: "alice", password: Self.password, deviceID: "d")).generation == 0)
    }
}

@testable import BatonCore
import BatonStorage
import BatonTestSupport
import Testing

/// "Your devices", on both stores: a user lists their live sessions and signs one, or all
/// others, out; signing out is critical (a recent authentication), so a thief with a fresh
/// token cannot sign the owner out of everything.
@Suite(.serialized)
struct SessionsTests {
    static let password = "correct horse battery"
    static let maxAge = Duration.seconds(300)

    /// alice on a phone, then a laptop, then bob on a phone.
    static func threeSessions(_ db: BackendDatabase) throws -> (phone: TokenBundle, laptop: TokenBundle, bob: TokenBundle) {
        let phone = try db.login("alice", device: "phone-1", deviceClass: .mobile, ip: "192.0.2.1")
        db.clock.advance(by: .seconds(10))
        let laptop = try db.login("alice", device: "laptop-1", deviceClass: .desktop, ip: "192.0.2.2")
        let bob = try db.login("bob", device: "phone-9", deviceClass: .mobile, ip: "192.0.2.9")
        return (phone, laptop, bob)
    }

    @Test(arguments: Backend.allCases)
    func theListShowsTheUsersLiveSessionsNewestFirstWithTheCurrentOne(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let (phone, laptop, _) = try Self.threeSessions(db)
            db.clock.advance(by: .seconds(5))
            let next = try db.store.exchange(phone.token, context: RequestContext(ip: "198.51.100.7", userAgent: "Phone/2"))
            let sessions = try db.store.base.sessions(presentedBy: next.token, context: RequestContext())
            #expect(sessions.map(\.chainID) == [laptop.chainID, phone.chainID])
            #expect(sessions.map(\.isCurrent) == [false, true])
            #expect(sessions.map(\.deviceID) == ["laptop-1", "phone-1"])
            #expect(sessions.map(\.deviceClass) == [.desktop, .mobile])
            #expect(sessions[1].lastAddress == "198.51.100.7" && sessions[1].lastUserAgent == "Phone/2")
            #expect(sessions[1].lastUsedAt == db.clock.now() && sessions[0].lastUsedAt < sessions[1].lastUsedAt)
            #expect(sessions[0].lastAddress == "192.0.2.2" && sessions[0].lastUserAgent == "TestApp/1.0")
            // The list answers as verify does for a token that does not verify.
            #expect(throws: BatonError.tokenSuperseded) { try db.store.base.sessions(presentedBy: phone.token, context: RequestContext()) }
            // The operator sees the same list, nothing current.
            let listed = try db.admin.sessions(ofUser: "ALICE")
            #expect(listed.map(\.chainID) == [laptop.chainID, phone.chainID] && !listed.contains { $0.isCurrent })
            #expect(throws: BatonError.userNotFound("carol")) { try db.admin.sessions(ofUser: "carol") }
        }
    }

    @Test(arguments: Backend.allCases)
    func signingOutNeedsARecentAuthenticationAndEndsOnlyThatSession(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let (phone, laptop, _) = try Self.threeSessions(db)
            db.clock.advance(by: .seconds(301))  // the laptop's login is now too old
            let store = db.store.base
            #expect(throws: BatonError.insufficientUserAuthentication(maxAge: 300)) {
                try store.signOut(session: phone.chainID, presentedBy: laptop.token, maxAge: Self.maxAge, context: RequestContext())
            }
            #expect(try db.store.verify(phone.token).chainID == phone.chainID)  // nothing happened
            _ = try store.confirm(laptop.token, password: Self.password, context: RequestContext())
            try store.signOut(session: phone.chainID, presentedBy: laptop.token, maxAge: Self.maxAge,
                              context: RequestContext(ip: "192.0.2.2", userAgent: "Laptop/1"))
            #expect(throws: BatonError.chainRevoked(.signedOut)) { try db.store.verify(phone.token) }
            #expect(throws: BatonError.chainRevoked(.signedOut)) { try db.store.exchange(phone.token) }
            #expect(try db.store.verify(laptop.token).chainID == laptop.chainID)
            let revoked = try db.auditEvents(kind: .chainRevoked)
            #expect(revoked.count == 1 && revoked[0].chainID == phone.chainID.rawValue)
            #expect(revoked[0].detail.contains(#""by_chain":"\#(laptop.chainID)""#) && revoked[0].detail.contains(#""reason":"signed_out""#))
        }
    }

    @Test(arguments: Backend.allCases)
    func anotherUsersOrAnUnknownOrAnEndedSessionIsNotFoundAlike(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let (phone, laptop, bob) = try Self.threeSessions(db)
            let store = db.store.base
            try db.store.logout(phone.token)
            for target in [bob.chainID, ChainID(rawValue: 12345), phone.chainID] {
                #expect(throws: BatonError.sessionNotFound) {
                    try store.signOut(session: target, presentedBy: laptop.token, maxAge: Self.maxAge, context: RequestContext())
                }
            }
            #expect(try db.store.verify(bob.token).chainID == bob.chainID)
            #expect(try db.auditEvents(kind: .chainRevoked).count == 1)  // the logout only
        }
    }

    @Test(arguments: Backend.allCases)
    func signingOutTheOthersKeepsOnlyTheCurrentSession(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            let (phone, laptop, bob) = try Self.threeSessions(db)
            let web = try db.login("alice", device: "browser-1", deviceClass: .web, ip: "192.0.2.3")
            let store = db.store.base
            let revoked = try store.signOutOtherSessions(presentedBy: web.token, maxAge: Self.maxAge, context: RequestContext())
            #expect(Set(revoked) == [phone.chainID, laptop.chainID])
            #expect(try store.sessions(presentedBy: web.token, context: RequestContext()).map(\.chainID) == [web.chainID])
            #expect(try db.store.verify(bob.token).chainID == bob.chainID)
            #expect(try store.signOutOtherSessions(presentedBy: web.token, maxAge: Self.maxAge, context: RequestContext()) == [])
        }
    }

    /// Issue 28, finding 3: "last used" is kept on the chain's row by each use as it is recorded
    /// (login, exchange, lost-response retry, step-up), left alone by a verify and a refusal, and
    /// read from that row alone: the list shows the same once the chain's audit events are gone
    /// (version 8 read them, and showed no address or User-Agent then).
    @Test(arguments: Backend.allCases)
    func theLastUseIsEachUseKeptOnTheChainsRowAndReadWithoutTheAudit(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        try await offPool {
            func from(_ host: Int, _ agent: String) -> RequestContext {
                RequestContext(ip: "192.0.2.\(host)", userAgent: agent, deviceID: "phone-1")
            }
            func lastUse() throws -> [String?] {
                let session = try #require(try db.admin.sessions(ofUser: "alice").first)
                return [session.lastUsedAt.rfc3339, session.lastAddress, session.lastUserAgent]
            }
            let login = try db.login("alice", ip: "192.0.2.1")
            #expect(try lastUse() == [db.clock.now().rfc3339, "192.0.2.1", "TestApp/1.0"])
            db.clock.advance(by: .seconds(5))
            _ = try db.store.exchange(login.token, context: from(2, "Phone/2"))
            #expect(try lastUse() == [db.clock.now().rfc3339, "192.0.2.2", "Phone/2"])
            db.clock.advance(by: .seconds(5))
            let retried = try db.store.exchange(login.token, context: from(3, "Phone/3"))  // R3a: the answer was lost
            #expect(try db.auditEvents(kind: .exchangeRetried).count == 1)
            #expect(try lastUse() == [db.clock.now().rfc3339, "192.0.2.3", "Phone/3"])
            db.clock.advance(by: .seconds(5))
            _ = try db.store.confirm(retried.token, password: Self.password, context: from(4, "Phone/4"))
            let stepUp = [db.clock.now().rfc3339, "192.0.2.4", "Phone/4"]
            #expect(try lastUse() == stepUp)
            // Neither a verify nor a refused confirmation is a use.
            db.clock.advance(by: .seconds(5))
            _ = try db.store.verify(retried.token, context: from(5, "Thief/1"))
            #expect(batonError { _ = try db.store.confirm(retried.token, password: "guess-guess", context: from(6, "Thief/1")) } == .wrongPassword)
            #expect(try lastUse() == stepUp)
            // The chain's audit events gone (pruned, or never read again): the same last use.
            _ = try db.rows("DELETE FROM audit WHERE chain_id = \(retried.chainID.rawValue)")
            #expect(try db.auditEvents().filter { $0.chainID == retried.chainID.rawValue }.isEmpty)
            #expect(try lastUse() == stepUp)
        }
    }
}

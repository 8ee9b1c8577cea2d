@testable import BatonCore
@testable import BatonStore
import Testing

/// R7 and the account operations that revoke chains.
struct DevicePolicyTests {
    @Test func loginBeyondTheLimitEvictsTheOldestChain() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 2
        let db = try TemporaryDatabase(policy: policy)
        let oldest = try db.login(device: "a")
        db.clock.advance(by: .seconds(1))
        let middle = try db.login(device: "b")
        db.clock.advance(by: .seconds(1))
        let newest = try db.login(device: "c")
        #expect(batonError { _ = try db.store.verify(oldest.token) } == .chainRevoked(.evicted))
        #expect(try db.store.verify(middle.token).deviceID == "b")
        #expect(try db.store.verify(newest.token).deviceID == "c")
    }

    @Test func unlimitedChainsWhenTheLimitIsZero() throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let db = try TemporaryDatabase(policy: policy)
        let bundles = try (0..<12).map { try db.login(device: "d\($0)") }
        for bundle in bundles { #expect(try db.store.verify(bundle.token).chainID == bundle.chainID) }
    }

    @Test func oneChainPerDeviceClassRevokesTheSameClass() throws {
        var policy = Policy()
        policy.oneChainPerDeviceClass = true
        let db = try TemporaryDatabase(policy: policy)
        let phone = try db.login(device: "phone-1", deviceClass: .mobile)
        let laptop = try db.login(device: "laptop", deviceClass: .desktop)
        let newPhone = try db.login(device: "phone-2", deviceClass: .mobile)
        #expect(batonError { _ = try db.store.verify(phone.token) } == .chainRevoked(.loggedInElsewhere))
        #expect(try db.store.verify(laptop.token).deviceID == "laptop")
        #expect(try db.store.verify(newPhone.token).deviceID == "phone-2")
    }

    @Test func passwordChangeRevokesAllTheUsersChains() throws {
        let db = try TemporaryDatabase()
        let one = try db.login(device: "a")
        let two = try db.login(device: "b")
        let revoked = try db.store.changePassword("alice", to: "a brand new password")
        #expect(Set(revoked) == [one.chainID, two.chainID])
        for bundle in [one, two] {
            #expect(batonError { _ = try db.store.verify(bundle.token) } == .chainRevoked(.passwordChanged))
        }
        #expect(batonError { _ = try db.login() } == .invalidCredentials)  // the old password is gone
        #expect(try db.auditEvents(kind: .passwordChanged).count == 1)
    }

    @Test func disablingAUserRevokesAllAndRefusesLogin() throws {
        let db = try TemporaryDatabase()
        let bundle = try db.login()
        try db.store.setDisabled("alice", true)
        #expect(batonError { _ = try db.store.verify(bundle.token) } == .chainRevoked(.userDisabled))
        #expect(batonError { _ = try db.login() } == .accountDisabled)
        try db.store.setDisabled("alice", false)
        #expect(try db.store.verify(try db.login().token).username == "alice")
        #expect(try db.auditEvents().map(\.kind).filter { $0.hasPrefix("user_") } == ["user_created", "user_disabled", "user_enabled"])
    }

    @Test func operatorRevokesAChainOrAUser() throws {
        let db = try TemporaryDatabase()
        let one = try db.login(device: "a")
        let two = try db.login(device: "b")
        #expect(try db.store.revokeChain(one.chainID))
        #expect(try !db.store.revokeChain(one.chainID))
        #expect(batonError { _ = try db.store.verify(one.token) } == .chainRevoked(.admin))
        #expect(try db.store.revokeChains(ofUser: "alice") == [two.chainID])
        #expect(batonError { _ = try db.store.revokeChain(ChainID(rawValue: 12345)) } == .chainNotFound(ChainID(rawValue: 12345)))
        #expect(batonError { _ = try db.store.revokeChains(ofUser: "nobody") } == .userNotFound("nobody"))
    }
}

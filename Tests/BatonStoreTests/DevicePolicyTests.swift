@testable import BatonCore
import BatonStorage
import Testing

/// R7 and the account operations that revoke chains, on both stores.
struct DevicePolicyTests {
    @Test(arguments: Backend.allCases)
    func loginBeyondTheLimitEvictsTheOldestChain(_ backend: Backend) async throws {
        var policy = Policy()
        policy.maxChainsPerUser = 2
        let db = try await BackendDatabase(backend, policy: policy)
        let oldest = try db.login(device: "a")
        db.clock.advance(by: .seconds(1))
        let middle = try db.login(device: "b")
        db.clock.advance(by: .seconds(1))
        let newest = try db.login(device: "c")
        #expect(batonError { _ = try db.store.verify(oldest.token) } == .chainRevoked(.evicted))
        #expect(try db.store.verify(middle.token).deviceID == "b")
        #expect(try db.store.verify(newest.token).deviceID == "c")
    }

    @Test(arguments: Backend.allCases)
    func unlimitedChainsWhenTheLimitIsZero(_ backend: Backend) async throws {
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let db = try await BackendDatabase(backend, policy: policy)
        let bundles = try (0..<12).map { try db.login(device: "d\($0)") }
        for bundle in bundles { #expect(try db.store.verify(bundle.token).chainID == bundle.chainID) }
    }

    @Test(arguments: Backend.allCases)
    func oneChainPerDeviceClassRevokesTheSameClass(_ backend: Backend) async throws {
        var policy = Policy()
        policy.oneChainPerDeviceClass = true
        let db = try await BackendDatabase(backend, policy: policy)
        let phone = try db.login(device: "phone-1", deviceClass: .mobile)
        let laptop = try db.login(device: "laptop", deviceClass: .desktop)
        let newPhone = try db.login(device: "phone-2", deviceClass: .mobile)
        #expect(batonError { _ = try db.store.verify(phone.token) } == .chainRevoked(.loggedInElsewhere))
        #expect(try db.store.verify(laptop.token).deviceID == "laptop")
        #expect(try db.store.verify(newPhone.token).deviceID == "phone-2")
    }

    @Test(arguments: Backend.allCases)
    func passwordChangeRevokesAllTheUsersChains(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let one = try db.login(device: "a")
        let two = try db.login(device: "b")
        let revoked = try db.admin.changePassword("alice", to: "a brand new password", context: .admin)
        #expect(Set(revoked) == [one.chainID, two.chainID])
        for bundle in [one, two] {
            #expect(batonError { _ = try db.store.verify(bundle.token) } == .chainRevoked(.passwordChanged))
        }
        #expect(batonError { _ = try db.login() } == .invalidCredentials)  // the old password is gone
        #expect(try db.auditEvents(kind: .passwordChanged).count == 1)
    }

    @Test(arguments: Backend.allCases)
    func disablingAUserRevokesAllAndRefusesLogin(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let bundle = try db.login()
        _ = try db.admin.setDisabled("alice", true, context: .admin)
        #expect(batonError { _ = try db.store.verify(bundle.token) } == .chainRevoked(.userDisabled))
        #expect(batonError { _ = try db.login() } == .accountDisabled)
        _ = try db.admin.setDisabled("alice", false, context: .admin)
        #expect(try db.store.verify(try db.login().token).username == "alice")
        #expect(try db.auditEvents().map(\.kind).filter { $0.hasPrefix("user_") } == ["user_created", "user_disabled", "user_enabled"])
    }

    @Test(arguments: Backend.allCases)
    func operatorRevokesAChainOrAUser(_ backend: Backend) async throws {
        let db = try await BackendDatabase(backend)
        let one = try db.login(device: "a")
        let two = try db.login(device: "b")
        #expect(try db.admin.revokeChain(one.chainID, note: nil, context: .admin))
        #expect(try !db.admin.revokeChain(one.chainID, note: nil, context: .admin))
        #expect(batonError { _ = try db.store.verify(one.token) } == .chainRevoked(.admin))
        #expect(try db.admin.revokeChains(ofUser: "alice", note: nil, context: .admin) == [two.chainID])
        #expect(batonError { _ = try db.admin.revokeChain(ChainID(rawValue: 12345), note: nil, context: .admin) } == .chainNotFound(ChainID(rawValue: 12345)))
        #expect(batonError { _ = try db.admin.revokeChains(ofUser: "nobody", note: nil, context: .admin) } == .userNotFound("nobody"))
    }
}

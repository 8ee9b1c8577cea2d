@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// "Your devices" from the client against a real server: the list with this app's session
/// marked; signing another device out asks the password once (only because the last entry is
/// too old) and that device then learns why it must log in again.
@Suite(.serialized, .ownThreads) struct DevicesClientTests {
    @Test func aPhoneListsTheSessionsAndSignsTheLaptopOutAfterOnePasswordPrompt() async throws {
        let server = try startServer()
        let phone = makeSession(server.baseURL)
        let laptop = makeSession(server.baseURL)
        try await phone.loginAlice(deviceClass: .mobile)
        try await laptop.loginAlice(deviceClass: .desktop)
        let laptopEvents = EventRecorder(laptop)

        let listed = try await phone.sessions()
        #expect(listed.map(\.deviceClass) == [.desktop, .mobile])
        #expect(listed.map(\.isCurrent) == [false, true])
        #expect(listed.allSatisfy { $0.deviceName == "test phone" && $0.lastUserAgent?.hasPrefix("BatonClientTests/1") == true })
        let laptopID = try #require(await laptop.chainID)
        #expect(listed[0].id == laptopID)

        // The phone's login is fresh: no prompt. Made old, the server asks once.
        try server.ageAuthentication(ofChain: try #require(await phone.chainID), by: 600)
        let asked = Counter()
        try await phone.signOut(sessionID: laptopID) { maxAge in
            asked.increment()
            #expect(maxAge == 300)
            return "correct horse battery"
        }
        #expect(asked.value == 1)
        let error = await #expect(throws: BatonClientError.self) { try await laptop.get("/v1/verify") }
        #expect(error == .loginRequired(.revoked(.signedOut)))
        #expect(LoginRequiredReason.revoked(.signedOut).defaultMessage == "You signed this device out from another device.")
        #expect(await eventuallyAsync { laptopEvents.events.contains(.loginRequired(.revoked(.signedOut))) })

        // Another user's or an ended session: 404, nothing asked (the confirmation is recent).
        var status: Int?
        do {
            try await phone.signOut(sessionID: laptopID) { _ in
                asked.increment()
                return "correct horse battery"
            }
        } catch BatonClientError.http(let code, _, _, _) {
            status = code
        }
        #expect(status == 404 && asked.value == 1)
        #expect(try await phone.sessions().map(\.isCurrent) == [true])
    }

    @Test func signingOutTheOtherSessionsKeepsThisOne() async throws {
        let server = try startServer()
        let phone = makeSession(server.baseURL)
        try await phone.loginAlice(deviceClass: .mobile)
        for deviceClass in [DeviceClass.desktop, .web] { try await makeSession(server.baseURL).loginAlice(deviceClass: deviceClass) }
        let revoked = try await phone.signOutOtherSessions { _ in "correct horse battery" }
        #expect(revoked == 2)
        #expect(try await phone.sessions().count == 1)
    }
}

@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// Issue 42, F1 and F10: `resetIfFirstLaunch()` logs out the session of an earlier installation
/// (the Keychain item survived the uninstall; the app's container, the library's installation
/// marker in it, did not), and nobody else: not the users of the update that adopts the call,
/// not a launch whose store or marker cannot be read yet, not a process with a marker of its
/// own. Real sessions against a real server; the marker is a real file in a test directory.
@Suite(.ownThreads) struct FirstLaunchTests {
    /// A directory standing for the app's container, removed with the test.
    final class Container: @unchecked Sendable {
        let url: URL
        init() throws { url = URL(fileURLWithPath: try temporaryDirectory(), isDirectory: true) }
        var location: InstallationMarkerLocation { .directory(url) }
        /// The uninstall: the container and the marker in it go; the Keychain stays.
        func uninstall() throws { try FileManager.default.removeItem(at: url) }
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// The app's launch as documented: the first-launch check, then the session's work.
    static func launch(_ server: ServerProcess, _ store: any CredentialStore, _ container: Container) async -> BatonSession {
        let session = makeSession(server.baseURL, store: store, installationMarker: container.location)
        await session.resetIfFirstLaunch()
        return session
    }

    @Test func firstLaunchAfterAReinstallLogsTheOldSessionOut() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()  // stands for a Keychain item that survives the uninstall
        let container = try Container()
        try await Self.launch(server, store, container).loginAlice()
        let token = try #require(try store.load()?.bundle?.token)
        #expect(try store.load()?.installation != nil)
        try container.uninstall()

        let session = makeSession(server.baseURL, store: store, installationMarker: container.location)
        #expect(await session.resetIfFirstLaunch())
        #expect(await session.restore() == .loggedOut(.loggedOut))
        #expect(try store.load()?.bundle == nil)
        #expect(try server.verifyAnswer(token, key: store.deviceKey(creating: false)) == "chain_revoked")
        // The next launch of this installation: nothing to do.
        #expect(await !makeSession(server.baseURL, store: store, installationMarker: container.location).resetIfFirstLaunch())
    }

    /// F1: the app update that adopts the call found every user's credentials without a
    /// stamp, and the old flag missing: it logged every one of them out and revoked their
    /// chains. Now unstamped credentials are stamped and kept; a reinstall after that is caught.
    @Test func theUpdateThatAdoptsTheCallLogsNobodyOut() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        // The release before the marker: its saves carry no stamp.
        try await makeSession(server.baseURL, store: store, installationMarker: .none).loginAlice()
        #expect(try store.load()?.installation == nil)
        let token = try #require(try store.load()?.bundle?.token)

        let container = try Container()
        let updated = makeSession(server.baseURL, store: store, installationMarker: container.location)
        #expect(await !updated.resetIfFirstLaunch())
        #expect(try server.verifyAnswer(token, key: store.deviceKey(creating: false)) == "ok")
        #expect(try await updated.get("/v1/verify") == 200)
        #expect(try store.load()?.installation != nil)
        #expect(try queryDatabase("SELECT count(*) FROM chains WHERE revoked_at IS NOT NULL", at: server.databasePath) == [["0"]])

        // Adopted: a reinstall from now on is recognised.
        try container.uninstall()
        #expect(await makeSession(server.baseURL, store: store, installationMarker: container.location).resetIfFirstLaunch())
    }

    /// Before the first unlock the store cannot be read, and the marker may not be either:
    /// neither decides anything (and the old flag, read as empty then, logged people out).
    @Test func anUnreadableStoreOrMarkerDecidesNothing() async throws {
        let server = try startServer()
        let store = FlakyStore()
        let container = try Container()
        try await Self.launch(server, store, container).loginAlice()
        let session = makeSession(server.baseURL, store: store, installationMarker: container.location)
        store.failLoads(1)  // the Keychain is locked
        #expect(await !session.resetIfFirstLaunch())
        #expect(store.contents?.bundle != nil)

        // A marker that exists but cannot be read (here a directory where the file should be).
        let marker = container.url.appendingPathComponent(InstallationMarker.fileName)
        try FileManager.default.removeItem(at: marker)
        try FileManager.default.createDirectory(at: marker, withIntermediateDirectories: false)
        #expect(await !makeSession(server.baseURL, store: store, installationMarker: container.location).resetIfFirstLaunch())
        #expect(store.contents?.bundle != nil)
        #expect(try await session.get("/v1/verify") == 200)
    }

    /// A process whose marker is another one (an extension with a container of its own, given
    /// a directory) never logs out what the app saved; nor does a session without a marker.
    @Test func anotherMarkerOrNoneDecidesNothing() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let app = try Container(), other = try Container()
        try await Self.launch(server, store, app).loginAlice()
        _ = InstallationMarker(other.location, isAppExtension: false).ensure()
        #expect(await !makeSession(server.baseURL, store: store, installationMarker: other.location).resetIfFirstLaunch())
        #expect(await !makeSession(server.baseURL, store: store, installationMarker: .none).resetIfFirstLaunch())
        #expect(try store.load()?.bundle != nil)
    }

    /// Review of F1, H1 and H2: a missing marker decides only about credentials its own
    /// location stamped. The app moving its marker (`.standard` to `.appGroup`), or another app
    /// of the team sharing the item launching for the first time, finds its marker missing and
    /// credentials stamped elsewhere: nobody is logged out.
    @Test func aMarkerAtANewLocationOrAnotherAppsFirstLaunchLogsNobodyOut() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let before = try Container(), after = try Container()
        try await Self.launch(server, store, before).loginAlice()
        let token = try #require(try store.load()?.bundle?.token)
        #expect(try store.load()?.installation?.hasSuffix(" dir:" + before.url.standardizedFileURL.path) == true)
        // The next release (or the sibling app) uses another location, where no marker is yet.
        #expect(await !Self.launch(server, store, after).resetIfFirstLaunch())
        #expect(try store.load()?.bundle?.token == token)
        #expect(try server.verifyAnswer(token, key: store.deviceKey(creating: false)) == "ok")
        // Adopted at the new location: a reinstall from now on is caught there.
        try after.uninstall()
        #expect(await makeSession(server.baseURL, store: store, installationMarker: after.location).resetIfFirstLaunch())
    }

    /// Review of F1, M3: a save before the first-launch check (a `restore(exchangeNow:)` started
    /// first) keeps the stamp it found, so the reinstall is still caught afterwards.
    @Test func aSaveBeforeTheCheckDoesNotHideAReinstall() async throws {
        let server = try startServer(["--token-ttl", "2s"])
        let store = MemoryCredentialStore()
        let container = try Container()
        try await Self.launch(server, store, container).loginAlice()
        let stamp = try #require(try store.load()?.installation)
        try container.uninstall()
        let relaunched = makeSession(server.baseURL, store: store, installationMarker: container.location)
        #expect(try await eventuallyAsync(within: 10) { try await relaunched.get("/v1/verify") == 200 && (try store.load()?.bundle?.generation ?? 0) > 0 })
        #expect(try store.load()?.installation == stamp, "the exchange's save replaced the earlier installation's stamp")
        #expect(await relaunched.resetIfFirstLaunch())
        #expect(try store.load()?.bundle == nil)
    }

    /// Where the marker lives: on Linux `$XDG_DATA_HOME/BatonClient` or `~/.local/share/
    /// BatonClient` (F10: the flag used to live nowhere there, so every launch was a first one);
    /// none in an extension without the App Group; and it keeps its id across launches.
    @Test func theMarkerLivesWhereItShouldAndKeepsItsID() throws {
        let xdg = InstallationMarker(.standard, isAppExtension: false, environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
        #expect(xdg.file?.path == "/data/BatonClient/installation")
        let home = InstallationMarker(.standard, isAppExtension: false, environment: ["HOME": "/home/u"])
        #expect(home.file?.path == "/home/u/.local/share/BatonClient/installation")
        #expect(InstallationMarker(.standard, isAppExtension: true).file == nil)
        #expect(InstallationMarker(.none, isAppExtension: false).file == nil)

        let container = try Container()
        let first = InstallationMarker(container.location, isAppExtension: false)
        #expect(first.read() == .missing)
        let id = try #require(first.ensure())
        #expect(InstallationMarker.isID(id))
        #expect(InstallationMarker(container.location, isAppExtension: false).ensure() == id)  // the next launch
        #expect(first.read() == .present(id))
        #expect(first.currentStamp() == InstallationMarker.Stamp(id: id, location: "dir:" + container.url.standardizedFileURL.path))
        #expect(InstallationMarker.Stamp(first.currentStamp()?.text) == first.currentStamp())
        #expect(InstallationMarker.Stamp("not a stamp") == nil && InstallationMarker.Stamp(id) == nil)
        // No half-written marker is ever seen: the file is linked into place whole.
        let files = try FileManager.default.contentsOfDirectory(atPath: container.url.path)
        #expect(files == [InstallationMarker.fileName])
    }

    /// The stored format: what this release writes is read by the previous one (a rollback:
    /// an unknown field is ignored) and what the previous one wrote is read by this one.
    @Test func theStoredFormatReadsBothWays() throws {
        let bundle = TokenBundle(token: "bt1_x", expiresAt: Date(timeIntervalSince1970: 1_800_000_000), chainID: "00000000000000aa", generation: 3)
        let current = try StoredCredentials(deviceID: "phone-1", bundle: bundle, installation: "6F9619FF-8B86-D011-B42D-00C04FC964FF").encoded()
        let previous = try #require(try JSONSerialization.jsonObject(with: current) as? [String: Any])
        var credentials = try #require(previous["credentials"] as? [String: Any])
        credentials["installation"] = nil
        let previousBytes = try JSONSerialization.data(withJSONObject: ["version": 1, "credentials": credentials])
        #expect(StoredCredentials.decode(previousBytes) == StoredCredentials(deviceID: "phone-1", bundle: bundle))
        #expect(StoredCredentials.decode(current)?.installation == "6F9619FF-8B86-D011-B42D-00C04FC964FF")
    }

    /// F14: credentials in a newer format (a rollback of the app, another app of the team
    /// sharing the item) read as "unavailable, newer format", never as logged out: the session
    /// shows no login screen and does not overwrite them. Through the file store and a session.
    @Test func aNewerFormatIsUnavailableNotLoggedOut() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/credentials.json"
        let newer = Data(#"{"version":2,"credentials":{"deviceID":"phone-1","somethingNew":true}}"#.utf8)
        #expect(FileManager.default.createFile(atPath: path, contents: newer, attributes: [.posixPermissions: 0o600]))
        let store = FileCredentialStore(path: path)
        #expect {
            _ = try store.load()
        } throws: { error in
            guard case BatonClientError.credentialsUnavailable(let why) = error else { return false }
            return why.contains("newer release") && why.contains("format 2")
        }
        let session = makeSession(URL(string: "http://127.0.0.1:9")!, store: store)
        #expect(await session.restore() == .credentialsUnavailable)
        #expect(FileManager.default.contents(atPath: path) == newer)
        // Nor does a login overwrite them under a new device id (review of F14, M6).
        await #expect(throws: BatonClientError.self) { try await session.loginAlice() }
        #expect(FileManager.default.contents(atPath: path) == newer)
        // Corrupt or an unknown older version is still "nothing stored".
        try Data(#"{"version":0}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(try store.load() == nil)
    }
}

/// Issue 42, F7: a login whose save fails left a live chain on the server, under a new device
/// id each time: ten retries evicted the user's other phone (the server keeps at most
/// `--max-chains-per-user` chains, evicting the oldest). Now the chain nobody can use is
/// revoked at once, and the retries keep one device id.
@Suite(.ownThreads) struct FailedLoginSaveTests {
    @Test func aLoginWhoseSaveFailsEndsItsChainAndKeepsItsDeviceID() async throws {
        let server = try startServer(["--max-chains-per-user", "3"])
        let phone = makeSession(server.baseURL)
        try await phone.loginAlice()  // the user's other phone
        let store = FlakyStore()
        store.failSaves(10)
        let session = makeSession(server.baseURL, store: store)
        for _ in 0..<10 {
            await #expect(throws: BatonClientError.self) { try await session.loginAlice() }
        }
        #expect(try await phone.get("/v1/verify") == 200, "the other phone was evicted")
        #expect(try queryDatabase("SELECT count(*) FROM chains WHERE revoked_at IS NULL", at: server.databasePath) == [["1"]])
        #expect(try queryDatabase("SELECT count(DISTINCT device_id) FROM chains", at: server.databasePath) == [["2"]])
        // Saves work again: the next login is the same device, and logged in.
        try await session.loginAlice()
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try queryDatabase("SELECT count(DISTINCT device_id) FROM chains", at: server.databasePath) == [["2"]])
    }
}

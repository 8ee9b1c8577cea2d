@testable import BatonClient
import BatonTestSupport
import Foundation
import Glibc
import Testing

/// The file store: durable, private, atomic, and a bad file means "logged out", never a crash.
@Suite(.ownThreads) final class CredentialStoreTests: Sendable {
    let directory: String
    let path: String
    let credentials = StoredCredentials(deviceID: "device-1", bundle: TokenBundle(
        token: "bt1_" + String(repeating: "x", count: 80), expiresAt: Date(timeIntervalSince1970: 1_800_000_000),
        serverExpiresAt: "2027-01-15T08:00:00Z", exchangeUntil: "2027-01-22T08:00:00Z", chainID: "33b0dcf32035aa7e", generation: 3))

    init() throws {
        directory = try temporaryDirectory()
        path = directory + "/credentials.json"
    }

    // Each test has its own instance: its directory goes with it, pass or fail.
    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// The permission bits of `path`.
    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func savedCredentialsReadBackFromANewStoreWithMode0600() throws {
        try FileCredentialStore(path: path).save(credentials)
        #expect(try FileCredentialStore(path: path).load() == credentials)
        #expect(mode(path) == 0o600)
        // Replacing leaves no temporary file behind, and the mode stays.
        try FileCredentialStore(path: path).save(StoredCredentials(deviceID: "device-1", bundle: nil))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["credentials.json"])
        #expect(mode(path) == 0o600)
        #expect(try FileCredentialStore(path: path).load()?.bundle == nil)
    }

    @Test func missingFileIsNothingStored() throws {
        #expect(try FileCredentialStore(path: path).load() == nil)
    }

    // A newer format (version 2) is not "corrupt": FirstLaunchTests.aNewerFormatIsUnavailableNotLoggedOut (F14).
    @Test(arguments: ["", "{", "not json at all", "\u{0}\u{1}\u{2}", #"{"version":1}"#, #"{"version":0,"credentials":{"deviceID":"d"}}"#, "truncated"])
    func corruptOrTruncatedFileIsLoggedOutNeverACrash(content: String) async throws {
        var bytes = Data(content.utf8)
        if content == "truncated" {
            let whole = try credentials.encoded()
            bytes = whole.prefix(whole.count / 2)
        }
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try FileCredentialStore(path: path).load() == nil)
        let session = makeSession(URL(string: "http://127.0.0.1:9")!, store: FileCredentialStore(path: path))
        #expect(await session.restore() == .loggedOut(.notLoggedIn))
        let error = await #expect(throws: BatonClientError.self) { try await session.get("/api/anything") }
        #expect(error == .loginRequired(.notLoggedIn))
    }

    @Test func unreadableStoreIsAStoreErrorAndALoggedOutSession() async throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)  // a directory where the file should be
        #expect(throws: BatonClientError.self) { try FileCredentialStore(path: path).load() }
        let session = makeSession(URL(string: "http://127.0.0.1:9")!, store: FileCredentialStore(path: path))
        #expect(await session.restore() == .loggedOut(.notLoggedIn))
    }

    @Test func sessionSurvivesARestartThroughTheFileStore() async throws {
        let server = try startServer()
        let first = makeSession(server.baseURL, store: FileCredentialStore(path: path))
        try await first.loginAlice()
        let chain = try #require(await first.chainID)
        // A new session on the same file: what the app sees at its next launch.
        let next = makeSession(server.baseURL, store: FileCredentialStore(path: path))
        #expect(await next.restore() == .loggedIn(chainID: chain, generation: 0))
        #expect(try await next.get("/v1/verify") == 200)
        #expect(mode(path) == 0o600)
    }

    @Test func theStoreLockExcludesASecondHolderUntilReleased() async throws {
        let store = FileCredentialStore(path: path)
        let first = try await store.lock()
        let acquired = Flag()
        let second = Task {
            let lock = try await FileCredentialStore(path: path).lock()
            acquired.set()
            lock.unlock()
        }
        try await Task.sleep(for: .milliseconds(300))  // a negative check: nothing to await
        #expect(!acquired.isSet)
        first.unlock()
        try await second.value
        #expect(acquired.isSet)
        #expect(mode(path + ".lock") == 0o600)
    }
}

/// A thread-safe boolean.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// Sets the flag.
    func set() { lock.lock(); value = true; lock.unlock() }
    /// Clears the flag.
    func clear() { lock.lock(); value = false; lock.unlock() }
    /// Whether the flag was set.
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

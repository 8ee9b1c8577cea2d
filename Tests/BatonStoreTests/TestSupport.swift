@testable import BatonCore
@testable import BatonStore
import BatonStorage
import Foundation
import Synchronization
import Testing

/// A clock the test moves by hand, so expiry is tested without sleeping.
final class ManualClock: WallClock {
    private let current: Mutex<Instant>

    init(_ start: Instant = Instant(milliseconds: 1_800_000_000_000)) { current = Mutex(start) }

    func now() -> Instant { current.withLock { $0 } }

    func advance(by duration: Duration) { current.withLock { $0 = $0 + duration } }
}

/// The temporary directories of this process's test databases that are not removed yet. A
/// database removes its own in deinit; once, in the full run, one was never removed (its
/// object outlived the run: the run left it in TMPDIR, which `scripts/test` refuses). At exit
/// the process removes what is left and names it on stderr, with the test that made it, so
/// that such a leak is seen and its test can be found without leaving files behind.
enum TestDirectories {
    private static let live = Mutex<[String: String]>([:])
    private static let cleanupAtExit: Void = {
        atexit {
            for (directory, test) in TestDirectories.live.withLock({ $0 }) {
                FileHandle.standardError.write(Data("test: removing \(directory) at exit, still held (made by \(test))\n".utf8))
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }()

    /// A new directory under TMPDIR, removed at exit unless `remove(_:)` was called first.
    static func make() throws -> String {
        _ = cleanupAtExit
        let directory = NSTemporaryDirectory() + "baton-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        live.withLock { $0[directory] = Test.current?.name ?? "?" }
        return directory
    }

    /// Removes `directory` (a database's deinit).
    static func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
        live.withLock { $0[directory] = nil }
    }
}

/// A fresh SQLite database file in its own temporary directory, removed on deinit: for the
/// tests of SQLite's own mechanics (the operations' tests use `BackendDatabase`).
final class TemporaryDatabase {
    let directory: String
    let path: String
    let clock = ManualClock()
    private(set) var store: TokenStore

    init(policy: Policy = Policy(), clock: (any WallClock)? = nil, options: TokenStore.Options = TokenStore.Options()) throws {
        directory = try TestDirectories.make()
        path = directory + "/baton.db"
        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
        store = try TokenStore(path: path, key: key, policy: policy, clock: clock ?? self.clock, options: options)
    }

    /// Closes and reopens the store on the same file (a restart).
    func reopen(policy: Policy? = nil, clock: (any WallClock)? = nil) throws {
        store.close()
        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: false)
        store = try TokenStore(path: path, key: key, policy: policy ?? store.policy, clock: clock ?? self.clock)
    }

    deinit {
        store.close()
        TestDirectories.remove(directory)
    }

    /// Creates `username` (once) and logs in from `device`.
    @discardableResult
    func login(_ username: String = "alice", device: String = "phone-1", deviceClass: DeviceClass = .mobile, ip: String = "192.0.2.10") throws -> TokenBundle {
        if (try? store.users().contains { $0.username == username }) != true {
            try store.createUser(username, password: "correct horse battery")
        }
        return try store.login(LoginRequest(username: username, password: "correct horse battery", deviceID: device, deviceClass: deviceClass),
                               context: RequestContext(ip: ip, userAgent: "TestApp/1.0"))
    }
}

/// The error a throwing call threw, as a `BatonError`.
func batonError(_ body: () throws -> Void) -> BatonError? {
    do {
        try body()
        return nil
    } catch let error as BatonError {
        return error
    } catch {
        return .unavailable("unexpected \(error)")
    }
}

/// Runs `body` on `count` real threads that are released together, and waits for all.
func race(threads count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = DispatchGroup()
    let finished = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        ready.enter()
        finished.enter()
        let thread = Thread {
            ready.leave()
            start.wait()
            body(index)
            finished.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    ready.wait()
    for _ in 0..<count { start.signal() }
    finished.wait()
}

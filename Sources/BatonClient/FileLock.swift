import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock(2)` on a lock file, shared by every process that opens the same path.
/// flock locks belong to the open file description, so two sessions in one process exclude each
/// other too. The wait runs on its own thread, never on Swift's cooperative pool, and is
/// bounded: the lock guards only reads and writes of the store, so a holder for longer than
/// `timeout` is stuck (suspended with the lock), not busy.
struct FileLock: Sendable {
    /// The lock file (created with mode 0600 when missing).
    let path: String
    /// The longest wait.
    var timeout: Duration = .seconds(10)

    /// The lock file's data protection class, set explicitly (issue 42, F4). A file made in
    /// an App Group container takes the app's default class, and under `complete` it cannot
    /// be opened while the device is locked: every exchange then failed (a background refresh,
    /// a notification service extension). The lock file holds no data, and the credentials it
    /// guards are readable after the first unlock (the Keychain item's
    /// `AfterFirstUnlockThisDeviceOnly`), so the file is readable from then on too.
    static let protection: FileProtectionType = .completeUntilFirstUserAuthentication

    /// What the lock file is created with: owner-only, and `protection` (iOS and its kin; the
    /// key means nothing on Linux and macOS, where it is not set).
    static var creationAttributes: [FileAttributeKey: Any] {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o600]
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        attributes[.protectionKey] = protection
        #endif
        return attributes
    }

    /// Makes the lock file with `creationAttributes` when it is missing; on iOS an existing one
    /// (made by an earlier release under the app's default class) is given `protection` too,
    /// which works whenever the device is unlocked (a failure leaves it for the next try).
    static func prepare(_ path: String) {
        guard prepared.firstTime(path) else { return }
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: creationAttributes)
            return
        }
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try? FileManager.default.setAttributes([.protectionKey: protection], ofItemAtPath: path)
        #endif
    }

    /// The paths prepared by this process (once each).
    private static let prepared = PreparedPaths()

    private final class PreparedPaths: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: Set<String> = []
        func firstTime(_ path: String) -> Bool { lock.withLock { paths.insert(path).inserted } }
    }

    /// Waits for the lock, at most `timeout`.
    /// - Throws: `BatonClientError.store` naming the file when it cannot be opened or locked in time.
    func acquire() async throws(BatonClientError) -> CredentialStoreLock {
        let path = self.path
        Self.prepare(path)
        let deadline = Date().addingTimeInterval(timeout.seconds)
        let result: Result<Int32, BatonClientError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard fd >= 0 else {
                    continuation.resume(returning: .failure(.store("cannot open lock file \(path): \(String(cString: strerror(errno)))")))
                    return
                }
                while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                    if errno == EINTR { continue }
                    let code = errno
                    if code == EWOULDBLOCK && Date() < deadline {
                        usleep(2000)  // held only for a read or a write: polled, never blocked on
                        continue
                    }
                    close(fd)
                    let why = code == EWOULDBLOCK ? "still held by another session after \(timeout)" : String(cString: strerror(code))
                    continuation.resume(returning: .failure(.store("cannot lock \(path): \(why)")))
                    return
                }
                continuation.resume(returning: .success(fd))
            }
            thread.start()
        }
        return Held(fd: try result.value())
    }

    /// The open, locked descriptor; closing it releases the lock.
    private final class Held: CredentialStoreLock, @unchecked Sendable {
        private let lock = NSLock()
        private var fd: Int32

        init(fd: Int32) { self.fd = fd }

        func unlock() {
            lock.lock()
            defer { lock.unlock() }
            guard fd >= 0 else { return }
            close(fd)  // releases the flock
            fd = -1
        }

        deinit { unlock() }
    }
}

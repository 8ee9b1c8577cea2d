import Foundation
import Glibc

/// A theft of everything a file store holds: the bundle and the device key file, copied to a
/// store of the thief's own and used by a real client (`baton-fault-device` in restore mode,
/// never logging in) straight against the server. Its proofs are good: nothing but reuse
/// detection (R3a/R4: two parties exchanging one chain) can stop it, and that ends the chain
/// for both, which the thief sees as a logout of its session.
final class KeyThief: StolenCopy, @unchecked Sendable {
    let chainID: String
    private let path: String
    private let arguments: [String]
    private let devicePath: String
    private let lock = NSLock()
    private var process: ChildProcess?
    private var revoked = false
    private var ending = "still using the copy"
    private var isStopping = false

    /// A thief holding a copy of the store at `path` (and of its key file, when there is one)
    /// at `copyPath`, or nil when no bundle is stored.
    init?(copying path: String, to copyPath: String, setup: BenchSetup) {
        // The key first: the store's bundle is then one the key was bound to (it never changes).
        let keyPath = path + ".dpop-key"
        if let key = FileManager.default.contents(atPath: keyPath) {
            guard FileManager.default.createFile(atPath: copyPath + ".dpop-key", contents: key, attributes: [.posixPermissions: 0o600]) else { return nil }
        }
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let credentials = object["credentials"] as? [String: Any],
              let bundle = credentials["bundle"] as? [String: Any], let chainID = bundle["chainID"] as? String,
              FileManager.default.createFile(atPath: copyPath, contents: data, attributes: [.posixPermissions: 0o600]) else { return nil }
        self.chainID = chainID
        self.path = copyPath
        devicePath = setup.devicePath
        arguments = ["http://127.0.0.1:\(setup.serverPort)", copyPath, setup.username, "-", "restore", "--no-login"]
            + (setup.bound ? [] : ["--unbound"])
    }

    /// Whether the thief's session ended: the server revoked the chain under it.
    var sawRevocation: Bool {
        lock.lock()
        defer { lock.unlock() }
        return revoked
    }

    /// Never: with the key, a refusal for want of it is no outcome (a refusal is a miss).
    var wasRefusedWithoutKey: Bool { false }

    var wasStopped: Bool { sawRevocation }

    var outcome: String {
        lock.lock()
        defer { lock.unlock() }
        return ending
    }

    /// Starts the thief's client after `delay`, and ends it after `span` if the server has not.
    func start(after delay: TimeInterval, for span: TimeInterval) {
        Thread { [self] in
            Thread.sleep(forTimeInterval: delay)  // the thief's own timing, not a synchronisation
            lock.lock()
            defer { lock.unlock() }
            guard !isStopping else { return }
            do {
                process = try ChildProcess(devicePath, arguments, onLine: { [weak self] _, line in self?.handle(line) },
                                           onExit: { [weak self] _, status in self?.exited(status) })
            } catch {
                ending = "could not start: \(error)"
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + span) { [weak self] in self?.stop() }
        }.start()
    }

    func stop() {
        lock.lock()
        defer { lock.unlock() }
        isStopping = true
        process?.signal(SIGTERM)
    }

    private func handle(_ line: String) {
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        lock.lock()
        defer { lock.unlock() }
        if words.first == "logout" {
            // Reuse detection ends the chain: `token_reused`, or `chain_revoked` (reuse, fork).
            let reason = words.count == 3 ? words[2] : "-"
            if reason == "tokenReused" || reason.hasPrefix("revoked") {
                revoked = true
            } else {
                ending = "ended otherwise: \(reason)"
            }
        }
    }

    private func exited(_ status: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if !revoked && ending == "still using the copy" {
            ending = isStopping ? "used the copy unnoticed until stopped" : "the thief's client ended (status \(status))"
        }
        for file in [path, path + ".dpop-key", path + ".lock"] { unlink(file) }
    }
}

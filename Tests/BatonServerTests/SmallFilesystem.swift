import Foundation
import Glibc

/// A tmpfs of a few MiB mounted by the test (root only), so that a database on it really runs
/// out of space. Unmounted on deinit.
final class SmallFilesystem {
    let path: String

    /// Why this machine cannot mount one (not root, no mount permission in a container), or
    /// nil when it can: tests that need one are skipped with this reason.
    static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "mounting a tmpfs needs root (the full-disk test runs as root in CI)" }
        do { _ = try SmallFilesystem(megabytes: 1) } catch { return "cannot mount a tmpfs here: \(error)" }
        return nil
    }()

    struct MountError: Error, CustomStringConvertible {
        var description: String
    }

    init(megabytes: Int) throws {
        path = NSTemporaryDirectory() + "baton-tmpfs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let (status, output) = Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
        guard status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw MountError(description: "mount -t tmpfs exited \(status): \(output)")
        }
    }

    deinit {
        _ = Self.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes a file of zeros until the filesystem is full. Returns the bytes written.
    @discardableResult
    func fill(_ name: String = "filler") -> Int {
        let fd = open(path + "/" + name, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { return total }
            total += written
        }
    }

    /// Free bytes, as statvfs reports them.
    var freeBytes: Int {
        var stats = statvfs()
        statvfs(path, &stats)
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> (Int32, String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do { try process.run() } catch { return (-1, "\(error)") }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}

import Foundation
import Glibc
import Synchronization

/// The `ServerProcess`es of this test process that have not deinitialized. An `atexit`
/// handler kills their servers and removes their directories: the last test of a run can end
/// (and the runner exit) before the thread that ran its work has released its
/// `ServerProcess` (`offPool`), which left the server running and its directory behind. A
/// crashed runner skips `atexit`: then scripts/test's private TMPDIR catches what is left.
enum ServerRegistry {
    /// A server, held weakly (the registry never keeps one alive), and its directory. A weak
    /// reference is nil once `deinit` has begun, and the runner may exit while a `deinit` runs
    /// on another thread (it has killed the server, not yet removed the directory).
    private final class Entry: @unchecked Sendable {
        weak var server: ServerProcess?
        let directory: String
        init(_ server: ServerProcess) {
            self.server = server
            directory = server.directory
        }
    }

    private static let entries = Mutex<[ObjectIdentifier: Entry]>([:])
    private static let handlerInstalled: Bool = {
        atexit { ServerRegistry.cleanUp() }
        return true
    }()

    /// Records a server just started.
    static func started(_ server: ServerProcess) {
        _ = handlerInstalled
        entries.withLock { $0[ObjectIdentifier(server)] = Entry(server) }
    }

    /// Forgets a server whose `ServerProcess` stopped it and removed its directory.
    static func released(_ server: ServerProcess) {
        entries.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(server)) }
    }

    private static func cleanUp() {
        for entry in entries.withLock({ Array($0.values) }) {
            entry.server?.process.send(SIGKILL)  // nothing once reaped: its PID may be another process's
            try? FileManager.default.removeItem(atPath: entry.directory)
        }
    }
}

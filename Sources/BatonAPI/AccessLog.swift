import BatonCore
import BatonHTTP
import Glibc
import Synchronization

/// One JSON line per request on standard output, buffered: requests append to memory and a
/// background thread writes every 100 ms (or a full 64 KiB buffer is written at once), so
/// logging never puts a write(2) on the request path. Never logs tokens, passwords or bodies.
final class AccessLog: Sendable {
    private let buffers = Sharded { [UInt8]() }
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)

    init(fd: Int32 = 1) {
        self.fd = fd
        let flusher = UnsafeSendable(self)
        Thread.spawnFlusher { flusher.value.flushLoop() }
    }

    /// Appends one line.
    func log(_ members: [String: JSONValue]) {
        let line = Array((JSONValue.object(members).text + "\n").utf8)
        let full = buffers.withLocalShard { buffer -> [UInt8]? in
            buffer += line
            guard buffer.count >= 64 * 1024 else { return nil }
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if let full { write(full) }
    }

    /// Writes what is buffered now.
    func flush() {
        var pending: [UInt8] = []
        buffers.forEachShard { buffer in
            pending += buffer
            buffer.removeAll(keepingCapacity: true)
        }
        if !pending.isEmpty { write(pending) }
    }

    /// Flushes and stops the background thread.
    func close() {
        stopped.store(true, ordering: .relaxed)
        flush()
    }

    private func flushLoop() {
        while !stopped.load(ordering: .relaxed) {
            usleep(100_000)  // the flush interval itself, not a synchronisation
            flush()
        }
    }

    private func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

/// Wraps a value for a closure that crosses to another thread when the type guarantees safety itself.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

enum Thread {
    static func spawnFlusher(_ body: @escaping @Sendable () -> Void) {
        BatonHTTP.spawn(body)
    }
}

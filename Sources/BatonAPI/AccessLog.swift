import BatonSync
import BatonCore
import BatonHTTP
import Glibc
import Synchronization

/// One JSON line per request on standard output, buffered: requests append to memory and a
/// background thread writes every 100 ms (or a full 64 KiB buffer is written at once), so
/// logging never puts a write(2) on the request path. Never logs tokens, passwords or bodies.
final class AccessLog: Sendable {
    /// A shard's pending bytes and its cached timestamp text (reformatted once a second).
    private struct Shard {
        var bytes: [UInt8] = []
        var second: Int64 = -1
        var time: [UInt8] = []
    }

    private let buffers = Sharded { Shard() }
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)

    init(fd: Int32 = 1) {
        self.fd = fd
        spawn { [self] in flushLoop() }
    }

    /// Appends one line: `{"time","method","path","status","duration_us","ip"[,"chain_id"][,"error"]}`.
    /// Built byte by byte (this runs for every request); method and path are escaped.
    func log(method: String, path: String, status: Int, durationMicroseconds: Int64, ip: String, chainID: ChainID?, error: ErrorCode? = nil, at now: Instant) {
        let full = buffers.withLocalShard { shard -> [UInt8]? in
            let second = now.milliseconds / 1000
            if second != shard.second {
                shard.second = second
                shard.time = Array(now.rfc3339.utf8)
            }
            func text(_ value: StaticString) { shard.bytes.append(value) }
            func escaped(_ value: String) { JSONValue.writeString(value, to: &shard.bytes) }
            text("{\"time\":\"")
            shard.bytes += shard.time
            text("\",\"method\":")
            escaped(method)
            text(",\"path\":")
            escaped(path)
            text(",\"status\":")
            HTTPResponse.appendDecimal(status, to: &shard.bytes)
            text(",\"duration_us\":")
            HTTPResponse.appendDecimal(Int(max(0, durationMicroseconds)), to: &shard.bytes)
            text(",\"ip\":\"")
            shard.bytes.append(utf8: ip)  // an address we formatted ourselves: digits, dots, colons, hex
            text("\"")
            if let chainID {
                text(",\"chain_id\":\"")
                chainID.appendHex(to: &shard.bytes)
                text("\"")
            }
            if let error {
                text(",\"error\":\"")
                shard.bytes.append(utf8: error.rawValue)  // one of our own snake_case codes
                text("\"")
            }
            text("}\n")
            guard shard.bytes.count >= 64 * 1024 else { return nil }
            defer { shard.bytes.removeAll(keepingCapacity: true) }
            return shard.bytes
        }
        if let full { write(full) }
    }

    /// Appends a line made elsewhere (the security log's) to the same buffered output, so the
    /// two never interleave within a line.
    func append(line: String) {
        let full = buffers.withLocalShard { shard -> [UInt8]? in
            shard.bytes.append(utf8: line)
            shard.bytes.append(UInt8(ascii: "\n"))
            guard shard.bytes.count >= 64 * 1024 else { return nil }
            defer { shard.bytes.removeAll(keepingCapacity: true) }
            return shard.bytes
        }
        if let full { write(full) }
    }

    /// Writes what is buffered now.
    func flush() {
        var pending: [UInt8] = []
        buffers.forEachShard { shard in
            pending += shard.bytes
            shard.bytes.removeAll(keepingCapacity: true)
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

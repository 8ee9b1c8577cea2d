/// The disk a power cut could leave, built from a `CrashLog` (docs/reliability.md, "Power
/// cuts"). A pure function of the log, the files as they were durably before it, the crash
/// point and a random source, so that it can be tested and replayed alone.
///
/// The model (as ALICE, OSDI 2014, and SQLite's own crash tests): what a file held at its
/// last sync before the crash is on disk. Of its later writes and truncates, any subset
/// survives, in any order, and the last write that survives may be torn at a sector boundary
/// (512 bytes). A file created since its last sync may have no directory entry at all (SQLite
/// syncs the directory at a WAL's first sync, which the log shows as the WAL's sync); a
/// deletion since then may not have happened. The WAL index (`-shm`) is gone: it lives in
/// shared memory and SQLite rebuilds it. Not modelled: a disk that acknowledges a flush it
/// did not make, or corrupts data it did write.
package enum CrashState {
    /// The sector size writes tear at.
    package static let sector = 512

    /// The files, by name, after a power cut just before operation `crashPoint` (an index into
    /// `log.operations`: operations before it were issued). A missing name: no file.
    package static func build(log: CrashLog, durableBefore baseline: [String: [UInt8]], crashPoint: Int,
                              random: inout some RandomNumberGenerator) -> [String: [UInt8]] {
        var result = baseline
        for (file, name) in log.files.enumerated() {
            let ops = log.operations[..<crashPoint].enumerated().filter { $0.element.file == file }
            let lastSync = ops.last { if case .sync = $0.element { return true } else { return false } }?.offset ?? -1
            var content: [UInt8]? = baseline[name]
            // Durable: everything up to the last sync, in order.
            for (index, op) in ops where index <= lastSync { apply(op, to: &content, log: log) }
            // Pending: a subset, in any order, the last one possibly torn.
            let pending = ops.filter { $0.offset > lastSync }.map(\.element)
            let createdSinceSync = pending.contains { if case .create = $0 { return true } else { return false } }
            if createdSinceSync, Bool.random(using: &random) {
                content = nil  // its directory entry never reached the disk
            } else {
                var chosen = pending.filter { op in
                    if case .create = op { return true }
                    return Bool.random(using: &random)
                }
                chosen.shuffle(using: &random)
                if createdSinceSync, content == nil { content = [] }
                for (position, op) in chosen.enumerated() {
                    if position == chosen.count - 1, case .write(let f, let offset, let bytes) = op, bytes.count > sector,
                       Int.random(in: 0..<3, using: &random) == 0 {
                        let sectors = Int.random(in: 0..<(bytes.count / sector), using: &random)
                        apply(.write(file: f, offset: offset, bytes: bytes.lowerBound..<(bytes.lowerBound + sectors * sector)),
                              to: &content, log: log)
                    } else {
                        apply(op, to: &content, log: log)
                    }
                }
            }
            result[name] = content
        }
        for name in result.keys where name.hasSuffix("-shm") { result[name] = nil }
        return result
    }

    /// One operation on a file's content (nil: the file does not exist).
    static func apply(_ op: CrashLog.Operation, to content: inout [UInt8]?, log: CrashLog) {
        switch op {
        case .write(_, let offset, let bytes):
            var file = content ?? []
            if file.count < offset + bytes.count { file += [UInt8](repeating: 0, count: offset + bytes.count - file.count) }
            file.replaceSubrange(offset..<(offset + bytes.count), with: log.data[bytes])
            content = file
        case .truncate(_, let size):
            var file = content ?? []
            if file.count > size { file.removeLast(file.count - size) } else { file += [UInt8](repeating: 0, count: size - file.count) }
            content = file
        case .create:
            if content == nil { content = [] }
        case .delete:
            content = nil
        case .sync, .mark:
            break
        }
    }
}

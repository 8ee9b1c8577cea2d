import BatonStore
import Glibc
import Testing

/// `DurableFile` (the key file, `baton admin backup`'s copies) at every crash point: its real
/// code runs against recorded system calls, and each crash state (every point, every subset
/// of the writes not yet synced, any prefix of the directory changes not yet synced, the
/// last write torn) is held to the
/// promise: before the write returned, the name holds the old file whole or the new one
/// whole (or nothing, if there was none); once it returned, the new one whole. Two mutants,
/// a missing fsync of the file and a missing fsync of the directory, are found.
struct DurableFileCrashTests {
    /// A disk of inodes and names, the calls made on it, and what was synced when.
    final class RecordedDisk: DurableFile.Calls {
        enum Op { case create(String, Int), write(Int, [UInt8]), fsync(Int), link(String, String), rename(String, String), unlink(String), syncDirectory }
        var names: [String: Int] = [:]
        var contents: [Int: [UInt8]] = [:]
        var descriptors: [Int32: Int] = [:]
        var ops: [Op] = []
        var nextInode = 1
        let skipsFileSync: Bool
        let skipsDirectorySync: Bool

        init(existing: [UInt8]?, skipsFileSync: Bool = false, skipsDirectorySync: Bool = false) {
            self.skipsFileSync = skipsFileSync
            self.skipsDirectorySync = skipsDirectorySync
            if let existing {
                names["dir/baton.db.key"] = 0
                contents[0] = existing
            }
        }

        func create(_ path: String, mode: mode_t) -> Int32 {
            if names[path] != nil { errno = EEXIST; return -1 }
            let inode = nextInode
            nextInode += 1
            names[path] = inode
            contents[inode] = []
            let fd = Int32(100 + inode)
            descriptors[fd] = inode
            ops.append(.create(path, inode))
            return fd
        }
        func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
            let chunk = Array(bytes.prefix(700))  // short writes: the loop must finish them
            contents[descriptors[fd]!]! += chunk
            ops.append(.write(descriptors[fd]!, chunk))
            return chunk.count
        }
        func fsync(_ fd: Int32) -> Int32 {
            if !skipsFileSync { ops.append(.fsync(descriptors[fd]!)) }
            return 0
        }
        func close(_ fd: Int32) { descriptors[fd] = nil }
        func link(_ from: String, _ to: String) -> Int32 {
            if names[to] != nil { errno = EEXIST; return -1 }
            names[to] = names[from]
            ops.append(.link(from, to))
            return 0
        }
        func rename(_ from: String, _ to: String) -> Int32 {
            names[to] = names[from]
            names[from] = nil
            ops.append(.rename(from, to))
            return 0
        }
        func unlink(_ path: String) {
            names[path] = nil
            ops.append(.unlink(path))
        }
        func syncDirectory(_ path: String) -> Int32 {
            if !skipsDirectorySync { ops.append(.syncDirectory) }
            return 0
        }

        /// Every content `name` may hold after a power cut just before op `point`: nil, no file.
        func outcomes(of name: String, crashingBefore point: Int, initial: [UInt8]?) -> Set<[UInt8]?> {
            let issued = Array(ops[..<point])
            let lastDirectorySync = issued.lastIndex { if case .syncDirectory = $0 { return true } else { return false } } ?? -1
            let namespace = issued.enumerated().filter {
                switch $0.element { case .create, .link, .rename, .unlink: true; default: false }
            }
            let durableNamespace = namespace.filter { $0.offset <= lastDirectorySync }.map(\.element)
            let pendingNamespace = namespace.filter { $0.offset > lastDirectorySync }.map(\.element)
            var results: Set<[UInt8]?> = []
            // Directory changes reach the disk in the order they were made (a journaling file
            // system commits them so; a rename is atomic): any prefix of the pending ones.
            for kept in 0...pendingNamespace.count {
                var view: [String: Int] = initial == nil ? [:] : ["dir/baton.db.key": 0]
                let chosen = durableNamespace + pendingNamespace.prefix(kept)
                for op in chosen {
                    switch op {
                    case .create(let path, let inode): view[path] = inode
                    case .link(let from, let to): view[to] = view[from]
                    case .rename(let from, let to): view[to] = view[from]; view[from] = nil
                    case .unlink(let path): view[path] = nil
                    default: break
                    }
                }
                guard let inode = view[name] else { results.insert(nil); continue }
                if inode == 0 { results.insert(initial); continue }
                for content in dataOutcomes(of: inode, in: issued) { results.insert(content) }
            }
            return results
        }

        /// An inode's possible contents: its synced writes, then any prefix of the later ones,
        /// the last torn at a 512-byte boundary or not (writes append here, so a subset that
        /// skips one leaves a hole: taken as a prefix of the bytes, which is what matters).
        func dataOutcomes(of inode: Int, in issued: [Op]) -> [[UInt8]] {
            var synced: [UInt8] = []
            var all: [UInt8] = []
            for op in issued {
                if case .write(let target, let bytes) = op, target == inode { all += bytes }
                if case .fsync(let target) = op, target == inode { synced = all }
            }
            var results = [synced, all]
            var cut = synced.count
            while cut < all.count { results.append(Array(all[..<cut])); cut += 512 }
            return results
        }
    }

    static let old = [UInt8](repeating: 0x6F, count: 65)
    static let new = Array((String(repeating: "0123456789abcdef", count: 100) + "\n").utf8)

    /// The promise, checked at every crash point; the first broken one, or nil.
    static func brokenPromise(existing: [UInt8]?, exclusive: Bool, skipsFileSync: Bool = false, skipsDirectorySync: Bool = false) throws -> String? {
        let disk = RecordedDisk(existing: existing, skipsFileSync: skipsFileSync, skipsDirectorySync: skipsDirectorySync)
        try DurableFile.write(new, to: "dir/baton.db.key", exclusive: exclusive, calls: disk)
        for point in 0...disk.ops.count {
            let allowed: Set<[UInt8]?> = point == disk.ops.count ? [new] : [existing, new]
            for outcome in disk.outcomes(of: "dir/baton.db.key", crashingBefore: point, initial: existing) where !allowed.contains(outcome) {
                return "a crash before op \(point) of \(disk.ops.count) leaves \(outcome.map { "\($0.count) bytes" } ?? "no file")"
            }
        }
        return nil
    }

    @Test func aNewKeyFileIsNoneOrWholeAtEveryCrashPointAndWholeOnceWritten() throws {
        #expect(try Self.brokenPromise(existing: nil, exclusive: true) == nil)
    }

    @Test func aReplacedFileIsTheOldOrTheNewWholeAtEveryCrashPoint() throws {
        #expect(try Self.brokenPromise(existing: Self.old, exclusive: false) == nil)
    }

    @Test func theMutantsAreFound() throws {
        // Without the file's fsync, the name can hold a torn file; without the directory's, the
        // written file can be missing after the write returned.
        let torn = try Self.brokenPromise(existing: nil, exclusive: true, skipsFileSync: true)
        #expect(torn != nil && torn!.contains("bytes"), "\(torn ?? "not found")")
        let missing = try Self.brokenPromise(existing: nil, exclusive: true, skipsDirectorySync: true)
        #expect(missing != nil && missing!.contains("no file"), "\(missing ?? "not found")")
        let reverted = try Self.brokenPromise(existing: Self.old, exclusive: false, skipsDirectorySync: true)
        #expect(reverted != nil, "replacing without the directory's fsync: not found")
    }

    @Test func anExclusiveWriteLosesToAnExistingFileAndLeavesNoTemporary() throws {
        let disk = RecordedDisk(existing: Self.old)
        #expect(throws: DurableFile.Failure.exists("dir/baton.db.key")) {
            try DurableFile.write(Self.new, to: "dir/baton.db.key", exclusive: true, calls: disk)
        }
        #expect(disk.names.keys.sorted() == ["dir/baton.db.key"] && disk.contents[disk.names["dir/baton.db.key"]!] == Self.old)
    }
}

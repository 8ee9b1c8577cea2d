import BatonCore
import CSystem
import Glibc

/// The chain rows a store's verify remembers (SQLite's `HeadMemory`, PostgreSQL's
/// `HeadWatch`): one copy for every thread, read and filled without a lock.
///
/// Fixed slots of 256 bytes in buckets of four, each slot guarded by a sequence lock
/// (`Sources/CSystem/head_slots.h`): a reader copies a slot and keeps the copy only if no
/// writer touched it meanwhile; a writer that finds its slot taken by another writer skips
/// (forgetting is always correct: the next verify reads the database). So a verify takes no
/// lock and never waits, and a row read on one event loop is answered from memory on all.
///
/// A row goes in the slot that holds its chain, else an empty one of its bucket, else a
/// pseudo-random one of the four: a live set larger than the table keeps a random part of it
/// (about the fraction that fits, whatever the order of use) and reads the rest. The slots
/// are mapped untouched, so memory is taken as rows arrive, up to 256 bytes a row.
/// The table only stores: whether a row is still current is decided by its store, from
/// the entry's epoch and time.
package final class SharedHeadTable: @unchecked Sendable {
    /// A row, the epoch at which it was read, and when (monotonic nanoseconds; 0 where the
    /// store does not use it).
    package struct Entry {
        package var record: ChainRecord
        package var epoch: UInt64
        package var readAt: UInt64
        package init(record: ChainRecord, epoch: UInt64, readAt: UInt64 = 0) {
            self.record = record
            self.epoch = epoch
            self.readAt = readAt
        }
    }

    /// `serve --verify-memory`'s default: 262,144 rows, 64 MiB at most.
    package static let defaultRows = 1 << 18
    /// Bytes one row takes at most.
    package static let bytesPerRow = MemoryLayout<baton_slot>.stride
    private static let ways = Int(BATON_SLOT_WAYS)
    private static let payloadWords = Int(BATON_SLOT_PAYLOAD_WORDS)

    /// Rows the table holds at most: `rows` rounded up to a power of two, at least one bucket.
    package let capacity: Int
    private let bucketMask: UInt64
    private let slots: UnsafeMutablePointer<baton_slot>
    private let mappedBytes: Int

    /// A table of at least `rows` rows; nil when `rows` is 0 or the memory cannot be mapped
    /// (`errno` says why; `mappingMessage` is the stores' message for it).
    package init?(rows: Int) {
        guard rows > 0, rows <= 1 << 30, let region = Self.map(bytes: Self.bytes(rows: rows)) else { return nil }
        mappedBytes = Self.bytes(rows: rows)
        capacity = mappedBytes / Self.bytesPerRow
        slots = region.bindMemory(to: baton_slot.self, capacity: capacity)
        bucketMask = UInt64(capacity / Self.ways - 1)
    }

    /// The bytes a table of `rows` rows maps: whole buckets, a power of two of them.
    package static func bytes(rows: Int) -> Int {
        var buckets = 1
        while buckets * ways < rows { buckets <<= 1 }
        return buckets * ways * bytesPerRow
    }

    /// The message when a table of `rows` rows could not be mapped (`errno` the system's error).
    package static func mappingMessage(rows: Int, errno: Int32) -> String {
        "--verify-memory \(rows): cannot map \(bytes(rows: rows) >> 20) MiB for verify's memory (\(String(cString: strerror(errno))));"
            + " lower --verify-memory, or 0 to read the database on every verify"
    }

    /// Anonymous pages read as zeros (every slot empty) and take memory only once written.
    private static func map(bytes: Int) -> UnsafeMutableRawPointer? {
        guard let region = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
              region != MAP_FAILED else { return nil }
        return region
    }

    deinit { munmap(slots, mappedBytes) }

    /// The row of `chain` if remembered.
    package func entry(for chain: ChainID) -> Entry? {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: Self.payloadWords) { words in
            let length = baton_bucket_read(bucket(chain), key(chain), words.baseAddress!)
            guard length > 0 else { return nil }
            return HeadSlotCodec.decode(UnsafeRawBufferPointer(words), length: Int(length), chain: chain)
        }
    }

    /// Remembers `entry` as `chain`'s row (unless it does not fit a slot, or another thread
    /// is writing the slot it would take).
    package func remember(_ entry: Entry, for chain: ChainID) {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: Self.payloadWords) { words in
            words.initialize(repeating: 0)  // the last word's bytes past the row are copied too
            guard let length = HeadSlotCodec.encode(entry, into: UnsafeMutableRawBufferPointer(words)) else { return }
            // Which slot a full bucket gives up: any of the four, from the clock, so that a chain
            // does not always take the same way (that would be a direct-mapped cache, which a
            // round-robin over more sessions than fit misses every time).
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let victim = ((key(chain) ^ UInt64(truncatingIfNeeded: now.tv_nsec)) &* 0xD6E8_FEB8_6659_FD93) >> 62
            _ = baton_bucket_write(bucket(chain), key(chain), words.baseAddress!, UInt64(length), victim)
        }
    }

    /// Forgets `chain`'s row.
    package func forget(_ chain: ChainID) { baton_bucket_clear(bucket(chain), key(chain)) }

    /// Rows held now (counts every slot: for the tests, not the hot path).
    package var count: Int { (0..<capacity).reduce(0) { $0 + (baton_slot_in_use(slots + $1) ? 1 : 0) } }

    private func key(_ chain: ChainID) -> UInt64 { UInt64(bitPattern: chain.rawValue) }

    private func bucket(_ chain: ChainID) -> UnsafeMutablePointer<baton_slot> {
        // Chain ids are random, but a hash keeps a table with patterned ids spread out too.
        let hash = (key(chain) &* 0x9E37_79B9_7F4A_7C15) >> 17
        return slots + Int(hash & bucketMask) * Self.ways
    }
}

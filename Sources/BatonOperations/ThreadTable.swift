import BatonCore
import Glibc
import Synchronization

/// One thread's remembered chain rows, for a store's verify from memory (SQLite's
/// `HeadMemory`, PostgreSQL's `HeadWatch`): read and written by that thread alone, found
/// through a pthread key (no lock). A thread serving a second store starts its table over.
///
/// Bounded by two generations of at most half the capacity each. A row is remembered in
/// the newer one; when that is full it becomes the older one and the older one is dropped
/// whole; a row recalled from the older one moves to the newer one. So the rows used
/// within the last half-capacity of fills stay, and making room costs no more than
/// filling did. (Two simpler evictions were measured and dropped, docs/design.md: a
/// table that started over remembered nothing useful when more sessions than the bound
/// came round-robin, and forgetting an eighth of one dictionary cost more than reading
/// the database: Swift's dictionary rehashes the rest of a cluster at each removal.)
/// Forgetting a row is always correct: its next verify reads the database.
package final class ThreadTable {
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

    private var owner: UInt64 = 0
    /// Rows one generation holds at most: half the owner's capacity (at least 1).
    private var half = 1
    private var newer: [ChainID: Entry] = [:]
    private var older: [ChainID: Entry] = [:]

    /// Rows remembered now: at most two generations' worth.
    package var count: Int { newer.count + older.count }

    /// The row of `chain` if remembered; one found in the older generation moves to the newer.
    package func entry(for chain: ChainID) -> Entry? {
        if let entry = newer[chain] { return entry }
        guard let entry = older.removeValue(forKey: chain) else { return nil }
        remember(entry, for: chain)
        return entry
    }

    /// Remembers `entry` as `chain`'s row, replacing any it had.
    package func remember(_ entry: Entry, for chain: ChainID) {
        if newer.count >= half, newer[chain] == nil {
            older = newer
            newer = Dictionary(minimumCapacity: half)
        }
        newer[chain] = entry  // a copy left in the older one is never read: the newer is looked in first
    }

    /// Whether `chain` has a row here, without moving it (for the tests).
    package func contains(_ chain: ChainID) -> Bool { newer[chain] != nil || older[chain] != nil }

    package func forget(_ chain: ChainID) {
        newer[chain] = nil
        older[chain] = nil
    }

    package func forgetAll() {
        newer = [:]
        older = [:]
    }

    /// The calling thread's table for the store whose memory is `owner` (a number no other
    /// store's memory has), holding at most `capacity` rows.
    package static func current(owner: UInt64, capacity: Int) -> ThreadTable {
        let table: ThreadTable
        if let raw = pthread_getspecific(threadTableKey) {
            table = Unmanaged<ThreadTable>.fromOpaque(raw).takeUnretainedValue()
        } else {
            table = ThreadTable()
            pthread_setspecific(threadTableKey, Unmanaged.passRetained(table).toOpaque())
        }
        if table.owner != owner {
            table.owner = owner
            table.half = max(1, capacity / 2)
            table.forgetAll()
        }
        return table
    }

    /// A number that names one store's memory among the tables' owners.
    package static func newOwner() -> UInt64 { nextOwner.add(1, ordering: .relaxed).newValue }
}

private let nextOwner = Atomic<UInt64>(0)

/// The key of every thread's `ThreadTable`; the table is released when its thread ends.
private let threadTableKey: pthread_key_t = {
    var key = pthread_key_t()
    let created = pthread_key_create(&key) { raw in
        if let raw { Unmanaged<ThreadTable>.fromOpaque(raw).release() }
    }
    precondition(created == 0, "pthread_key_create: \(created)")
    return key
}()

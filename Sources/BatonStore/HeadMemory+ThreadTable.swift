import BatonCore
import BatonOperations
import Glibc

extension HeadMemory {
    /// One thread's remembered rows: read and written by that thread alone, found through a
    /// pthread key (no lock). A thread serving a second store starts its table over.
    final class ThreadTable {
        /// A row and the epoch at which it was read.
        struct Entry {
            var record: ChainRecord
            var epoch: UInt64
        }

        var owner: UInt64 = 0
        var entries: [ChainID: Entry] = [:]

        /// Makes room in a full table: forgets the first eighth of its rows in the dictionary's
        /// order, which is the order of their keys' hashes (seeded per process), so an
        /// arbitrary eighth, not the oldest. A table that started over instead (the first
        /// version) remembered nothing useful when the live set was larger than the bound and
        /// tokens came round-robin: every row was forgotten before its chain came back.
        /// Forgetting a row is always correct: its next verify reads the database.
        func forgetAnEighth() {
            let victims = Array(entries.keys.prefix(max(1, entries.count / 8)))
            for chain in victims { entries[chain] = nil }
        }

        /// The calling thread's table for `memory`.
        static func current(for memory: HeadMemory) -> ThreadTable {
            let table: ThreadTable
            if let raw = pthread_getspecific(threadTableKey) {
                table = Unmanaged<ThreadTable>.fromOpaque(raw).takeUnretainedValue()
            } else {
                table = ThreadTable()
                pthread_setspecific(threadTableKey, Unmanaged.passRetained(table).toOpaque())
            }
            if table.owner != memory.identity {
                table.owner = memory.identity
                table.entries = [:]
            }
            return table
        }
    }
}

/// The key of every thread's `ThreadTable`; the table is released when its thread ends.
private let threadTableKey: pthread_key_t = {
    var key = pthread_key_t()
    let created = pthread_key_create(&key) { raw in
        if let raw { Unmanaged<HeadMemory.ThreadTable>.fromOpaque(raw).release() }
    }
    precondition(created == 0, "pthread_key_create: \(created)")
    return key
}()

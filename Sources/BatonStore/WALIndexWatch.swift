import CSystem
import Synchronization

/// A read-only look at the database's WAL index (`<db>-shm`), to learn without a lock or a
/// system call whether any connection of any process committed since a moment.
///
/// SQLite writes the WAL index header at every commit (`walIndexWriteHdr` in src/wal.c), and
/// `iChange` there grows by one at every commit that wrote frames; `mxFrame` is the WAL's
/// length. `key()` reads both as one 64-bit value, the way SQLite's own readers read the
/// header (two copies, trusted only when equal). Anything unexpected (the copies differ,
/// another header version, an uninitialized header) answers nil: "changed".
/// docs/design.md ("Verify from memory") says which SQLite internals this relies on.
///
/// The mapping is the writer connection's own (`Connection.walIndexMapping`): it lives as
/// long as that connection, which `GroupCommitWriter` closes only after `close()` here.
final class WALIndexWatch: @unchecked Sendable {
    private let mapping: UnsafeRawPointer
    private let isOpen = Atomic<Bool>(true)

    /// nil when the connection has no WAL index mapped (then nothing is answered from memory).
    init?(connection: Connection) {
        guard let mapping = connection.walIndexMapping() else { return nil }
        self.mapping = mapping
    }

    /// `(iChange << 32) | mxFrame` of the current header, or nil when it cannot be trusted
    /// (or the connection is closing).
    func key() -> UInt64? {
        guard isOpen.load(ordering: .acquiring) else { return nil }
        var key: UInt64 = 0
        return baton_wal_index_key(mapping, &key) == 1 ? key : nil
    }

    /// Stops reading the mapping: the connection that owns it is about to close.
    func close() { isOpen.store(false, ordering: .releasing) }

    /// The commit counter in `key`.
    static func changeCounter(of key: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: key >> 32) }
}

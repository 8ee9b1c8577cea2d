import BatonSync
import Glibc
import Synchronization

/// Read connections for verify and lookups. In WAL mode a reader sees the last committed
/// state and never waits for the writer, so reads scale across threads.
///
/// A fixed array of slots, each claimed with a compare-and-swap: a thread starts at a slot
/// chosen by its thread id and takes the first free one. No mutex, so a reader preempted
/// mid-query (64 threads on 2 cores) holds up nobody but its own slot. Connections open on
/// first use of a slot; when every slot is busy, a transient connection serves the call.
final class ReaderPool: @unchecked Sendable {
    private final class Slot: @unchecked Sendable {
        let busy = Atomic<Bool>(false)
        var connection: Connection?  // touched only by the thread that holds `busy`
    }

    private let path: String
    private let options: Connection.Options
    private let slots: [Slot]

    init(path: String, busyTimeout: Duration, readOnlyFile: Bool = false, slots count: Int = 64) {
        self.path = path
        var options = Connection.Options()
        options.readOnlyFile = readOnlyFile
        options.create = false
        options.readOnly = true
        options.busyTimeout = busyTimeout
        self.options = options
        self.slots = (0..<count).map { _ in Slot() }
    }

    /// Runs `body` with a reader that no other thread uses meanwhile.
    func read<T>(_ body: (Connection) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let start = Int((UInt(pthread_self()) >> 8 &* 0x9E37_79B9) % UInt(slots.count))
        for offset in 0..<slots.count {
            let slot = slots[(start + offset) % slots.count]
            guard slot.busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { continue }
            defer { slot.busy.store(false, ordering: .releasing) }
            if slot.connection == nil { slot.connection = try Connection(path: path, options: options) }
            return try body(slot.connection!)
        }
        return try body(try Connection(path: path, options: options))
    }

    /// Closes the slots' connections. Callers must have stopped reading.
    func close() {
        for slot in slots where slot.busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            slot.connection?.close()
            slot.connection = nil
        }
    }
}

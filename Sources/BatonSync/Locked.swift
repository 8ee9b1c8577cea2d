import Glibc

/// A value behind a pthread mutex. Used instead of `Synchronization.Mutex` on request paths:
/// that one spins in its slow path, which with dozens of connection threads on 2 cores burns
/// the CPU the lock holder needs (28% of a verify profile); a pthread mutex sleeps at once.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// `count` independently locked values; each thread uses the one its thread id selects, so
/// threads rarely meet on a lock. Readers merge all shards.
package final class Sharded<Value>: Sendable {
    private let shards: [Locked<Value>]

    package init(count: Int = 16, _ make: () -> Value) { shards = (0..<count).map { _ in Locked(make()) } }

    /// Runs `body` on the calling thread's shard.
    package func withLocalShard<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        let index = Int((UInt(pthread_self()) >> 8 &* 0x9E37_79B9) % UInt(shards.count))
        return try shards[index].withLock(body)
    }

    /// Runs `body` on every shard in turn.
    package func forEachShard(_ body: (inout Value) throws -> Void) rethrows {
        for shard in shards { try shard.withLock(body) }
    }
}

import Glibc
import Synchronization

/// A value behind a pthread mutex. Used instead of `Synchronization.Mutex` on request paths:
/// that one spins in its slow path, which with dozens of connection threads on 2 cores burns
/// the CPU the lock holder needs (28% of a verify profile); a pthread mutex sleeps at once.
public final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Inlinable and public, so that callers
    /// in other modules get a version specialized to their value: the generic one looked up
    /// type metadata on every call (1.6-1.8 % of a verify's CPU through `Sharded`). Swift 6.3
    /// does not specialize an `@inlinable package` function in another module, only a public one.
    @inlinable public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// `count` independently locked values; each thread uses its own shard: threads are numbered
/// in the order they first use any `Sharded` (the event loops start first), so up to `count`
/// threads never meet on a lock; hashing the thread id put two of two event loops on one
/// shard often enough to be most of verify's futex calls (issue 30). Readers merge all shards.
public final class Sharded<Value>: Sendable {
    @usableFromInline let shards: [Locked<Value>]

    public init(count: Int = 16, _ make: () -> Value) { shards = (0..<count).map { _ in Locked(make()) } }

    /// Runs `body` on the calling thread's shard.
    @inlinable public func withLocalShard<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try shards[ThreadNumber.current % shards.count].withLock(body)
    }

    /// Runs `body` on every shard in turn.
    @inlinable public func forEachShard(_ body: (inout Value) throws -> Void) rethrows {
        for shard in shards { try shard.withLock(body) }
    }
}

/// A small number for the calling thread, given in the order threads first ask (0, 1, 2...).
@usableFromInline enum ThreadNumber {
    /// The calling thread's number.
    @usableFromInline static var current: Int {
        if let stored = pthread_getspecific(key) { return Int(bitPattern: stored) - 1 }
        let number = next.add(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: number + 1))
        return number
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key, nil)
        precondition(created == 0, "pthread_key_create: \(created)")
        return key
    }()
    private static let next = Atomic<Int>(0)
}

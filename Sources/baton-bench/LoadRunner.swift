import Glibc
import Synchronization

/// Runs a body on N real threads for a fixed time and counts completed operations.
enum LoadRunner {
    /// Monotonic seconds.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    private final class Shared: @unchecked Sendable {
        let stop = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        let counts: UnsafeMutableBufferPointer<Int>
        let body: (Int) -> Void
        init(threads: Int, body: @escaping (Int) -> Void) {
            counts = .allocate(capacity: threads)
            counts.initialize(repeating: 0)
            self.body = body
        }
        deinit { counts.deallocate() }
    }

    private final class Slot: @unchecked Sendable {
        let shared: Shared
        let index: Int
        init(_ shared: Shared, _ index: Int) {
            self.shared = shared
            self.index = index
        }
    }

    /// Operations per second of `body(threadIndex)` run in a loop on `threads` threads for `seconds`.
    static func throughput(threads: Int, seconds: Double, _ body: @escaping (Int) -> Void) -> Double {
        let shared = Shared(threads: threads, body: body)
        var handles: [pthread_t] = []
        for index in 0..<threads {
            var thread = pthread_t()
            pthread_create(&thread, nil, { raw in
                let slot = Unmanaged<Slot>.fromOpaque(raw!).takeRetainedValue()
                slot.shared.started.add(1, ordering: .relaxed)
                var count = 0
                while !slot.shared.stop.load(ordering: .relaxed) {
                    slot.shared.body(slot.index)
                    count += 1
                }
                slot.shared.counts[slot.index] = count
                return nil
            }, Unmanaged.passRetained(Slot(shared, index)).toOpaque())
            handles.append(thread)
        }
        while shared.started.load(ordering: .relaxed) < threads { sched_yield() }
        let start = now()
        var remaining = seconds
        while remaining > 0 {
            usleep(UInt32(min(remaining, 0.1) * 1e6))  // the timer of the measurement itself, not a synchronisation
            remaining = seconds - (now() - start)
        }
        shared.stop.store(true, ordering: .relaxed)
        for thread in handles { pthread_join(thread, nil) }
        let elapsed = now() - start
        return Double(shared.counts.reduce(0, +)) / elapsed
    }
}

import Foundation
import Glibc
import Synchronization

/// The process's wall clock moved by an offset the benchmark writes to a file (clock-jump):
/// this program defines `clock_gettime` itself (exported for the shared libraries by a linker
/// flag in Package.swift), so every reading of `CLOCK_REALTIME` in the process, Foundation's
/// `Date()` among them, is the real time plus the offset: the wall clock the client's exchange
/// claim reads. The boot and monotonic clocks (the claim's lease since M5, timers, sleeps)
/// pass through unmoved, as on a phone whose time is changed.
enum WallClock {
    /// The offset now, in nanoseconds.
    static let offset = Atomic<Int64>(0)

    /// Reads the offset (seconds, as text) from `path` now and every 10 ms from then on, on a
    /// thread of its own; both processes of a device follow the same file.
    static func follow(_ path: String) {
        read(path)
        Thread {
            while true {
                usleep(10_000)  // the file's poll, not a synchronisation: a jump lands within 10 ms
                read(path)
            }
        }.start()
    }

    /// Plain system calls only: anything that reads the clock would come back here.
    private static func read(_ path: String) {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, let seconds = Double(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        offset.store(Int64(seconds * 1e9), ordering: .relaxed)
    }
}

private typealias ClockGettime = @convention(c) (clockid_t, UnsafeMutablePointer<timespec>?) -> Int32

/// glibc's `clock_gettime`, the next definition after this program's (RTLD_NEXT is -1).
nonisolated(unsafe) private let libcClockGettime = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: -1), "clock_gettime"), to: ClockGettime.self)

/// `clock_gettime(2)` with `CLOCK_REALTIME` (and its coarse variant) moved by `WallClock.offset`.
@_cdecl("clock_gettime")
public func shiftedClockGettime(_ clock: clockid_t, _ spec: UnsafeMutablePointer<timespec>?) -> Int32 {
    let result = libcClockGettime(clock, spec)
    guard result == 0, let spec, clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE else { return result }
    let moved = Int64(spec.pointee.tv_sec) * 1_000_000_000 + Int64(spec.pointee.tv_nsec) + WallClock.offset.load(ordering: .relaxed)
    spec.pointee.tv_sec = Int(moved / 1_000_000_000)
    spec.pointee.tv_nsec = Int(moved % 1_000_000_000)
    return 0
}

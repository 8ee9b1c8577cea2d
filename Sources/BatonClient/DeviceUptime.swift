#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Seconds on the device's boot-relative clock: it counts while the device sleeps, it is the
/// same for every process of the device, and the user cannot set it (the wall clock can jump:
/// a manual change, a time-zone trip on a phone without automatic time, an NTP step). Exchange
/// claims measure their lease on it (issue 29, M5). `CLOCK_MONOTONIC` on Apple platforms
/// (which counts sleep there), `CLOCK_BOOTTIME` on Linux. It restarts at zero at each boot: a
/// claim read back with a reading later than now is from an earlier boot, and stale.
/// (Declared in PrivacyInfo.xcprivacy: system boot time, reason 35F9.1.)
enum DeviceUptime {
    /// The clock now.
    static func now() -> Double {
        var spec = timespec()
        #if canImport(Darwin)
        clock_gettime(CLOCK_MONOTONIC, &spec)
        #else
        clock_gettime(CLOCK_BOOTTIME, &spec)
        #endif
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

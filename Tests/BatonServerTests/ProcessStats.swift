import Foundation
import Glibc

/// A process's resident memory, open descriptors and CPU time, read from /proc.
struct ProcessStats {
    var residentKiB: Int
    var openDescriptors: Int
    /// User plus system CPU time.
    var cpuSeconds: Double

    init(pid: Int32) throws {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        residentKiB = rss.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) } ?? 0
        openDescriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
        // Fields 14 and 15 of /proc/PID/stat (utime, stime) in clock ticks, after the ")".
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.lastIndex(of: ")")!...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        cpuSeconds = (Double(fields[12])! + Double(fields[13])!) / ticks
    }
}

/// Latencies in seconds, for percentiles.
struct Latencies {
    private(set) var samples: [Double] = []

    mutating func record(_ seconds: Double) { samples.append(seconds) }
    mutating func append(_ other: Latencies) { samples += other.samples }

    /// The `fraction` percentile (0.99 for p99), in milliseconds; 0 with no samples.
    func percentile(_ fraction: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] * 1000
    }

    var count: Int { samples.count }
}

/// Seconds `body` took.
func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let started = DispatchTime.now().uptimeNanoseconds
    let value = try body()
    return (value, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
}
